"""The tables of the embedded crawl state's SQLite file and how a request
is kept in a row of its queue: the layout and its formats, the statuses,
the statements that read rows, the keys stored without their origin, the
``extra`` column's codes; ``create`` makes an empty file of this format.

Apart from webspider.frontier.sqlite (which keeps the queue, the seen-set
and the leases in these tables) because it is the file's format: what a
reader of the file or a change of format needs, without the state's
behaviour.

Layout (``FORMAT_VERSION`` 10; 3 changed the records' keys only, 4 their
values: the links waiting for their target share a row, 5 the mirror's
namespaces: no ``mirror.where``, 6 the waiting links packed by target in
a table of their own, 7 fingerprints of 32 bits, 8 a waiting-links
chunk's cleared bits in a column, 9 a done row's status 0 and the
namespaces keyed by hashes in tables of their own, keys as bytes, 10 a
waiting link's repeated text kept once)::

    url(id INTEGER PRIMARY KEY,  -- the order rows were queued in (FIFO)
        fp INTEGER NOT NULL,     -- 32-bit fingerprint of the key (4 bytes)
        key TEXT NOT NULL,       -- the exact de-duplication key, without
                                 -- its origin's name when it begins with it
        url TEXT,                -- as found; NULL when equal to key
        status INTEGER NOT NULL, -- 1 queued, 2 leased, 0 done, 4 deferred
        origin INTEGER NOT NULL, -- origin.id
        depth, round, priority, kind INTEGER NOT NULL,  -- kind: 0 page, 1 requisite
        referer INTEGER,         -- url.id of the page it was found on
        extra TEXT)              -- JSON of the rest (method, meta, an unknown
                                 -- referer, another kind); NULL when none,
                                 -- "1" for the usual link's (_EXTRA_CODES)
                                 -- (referer and extra: NULL once done)
    INDEX fp ON url(fp)
    INDEX queued ON url(origin, depth, priority DESC) WHERE status = 1
                             -- and the id: an index ends with its rows' ids
                             -- (id in the list stored it twice: 4 bytes an
                             -- entry, format 7); ORDER BY … id reads it so
    INDEX deferred ON url(status) WHERE status = 4     -- in id order
    origin(id INTEGER PRIMARY KEY, name TEXT UNIQUE)
    meta(name TEXT PRIMARY KEY, value TEXT)         -- format, round, offsets, …
    namespace, record        -- records (webspider.frontier.sqliterecords)
    waiting, waiting_text    -- links.waiting, packed (sqlitewaiting.SQLiteWaiting)
    hashed_<namespace>       -- the namespaces keyed by hashes, their keys'
                             -- bytes (sqlitehashed.SQLiteHashed)

Why the id is the queue's order and not the fingerprint (format 1): rows
are appended at the end of the table, and leased and acknowledged in about
the order they were queued, so a commit rewrites a few pages of the table
(every page a commit touches is written to the log again, and fsynced)
instead of one page for nearly every URL queued, leased or acknowledged
since the last commit; only the fingerprint index (~14 bytes an entry)
takes random inserts. The table's pages are full (a B-tree filled at its
end splits nothing), and the key drops its origin's ``scheme://host``,
which the origin column gives: ~30 B/URL less than format 1
(bench/README.md, "Where the state's bytes go").

Pure: standard library only.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import TYPE_CHECKING, Any

from webspider.frontier.requestdata import REFERER_HEADER
from webspider.frontier.sqliterecords import SCHEMA as RECORDS_SCHEMA
from webspider.frontier.state import FORMAT_VERSION, META_FORMAT

if TYPE_CHECKING:
    from pathlib import Path

#: a done row's status is 0: SQLite stores the integers 0 and 1 in no
#: byte of the row (their type in its header says it), and most rows of a
#: crawl that ran a while are done (3 before format 9: a byte a URL)
QUEUED, LEASED, DONE, DEFERRED = 1, 2, 0, 4
SEEN = (QUEUED, LEASED, DONE)
KINDS = {"page": 0, "requisite": 1}
KIND_NAMES = {v: k for k, v in KINDS.items()}
#: The page size of a new state file (a state keeps the one it was made
#: with). A commit inserts the links that wait for an outcome (the reports'
#: referrers, the mirror's kept links) at random places of the records'
#: B-tree, ~1 row a page it touches, and the log receives every page it
#: touched whole: with 1 KiB pages instead of SQLite's 4 KiB a commit logs
#: 2.5x fewer bytes (the log's peak at 10,000 pages: 622 -> 264 B/URL), for
#: ~1 % more of the file in page headers and B-tree levels (bench/README.md,
#: "The state's peak").
PAGE_SIZE = 1024

TABLES = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE origin (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE url (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL,
    key TEXT NOT NULL,
    url TEXT,
    status INTEGER NOT NULL,
    origin INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    round INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    referer INTEGER,
    extra TEXT
);
"""
#: the queue's indexes
INDEXES = """
CREATE INDEX url_fp ON url (fp);
CREATE INDEX url_queued ON url (origin, depth, priority DESC) WHERE status = 1;
CREATE INDEX url_deferred ON url (status) WHERE status = 4;
"""
#: a request's row, and its referer's URL (the page it was found on) read
#: in the same query
ROW = (
    "u.id, u.key, u.url, u.origin, u.depth, u.round, u.priority, u.kind,"
    " u.referer, u.extra, r.url, r.key, r.origin"
    " FROM url u LEFT JOIN url r ON r.id = u.referer"
)
#: an origin's next queued rows. The status is written in the statement,
#: not bound: the partial index url_queued (WHERE status = 1) then serves
#: it as prepared. With the status bound, SQLite prepared the statement
#: again on every run, to check that the value allows the index: 150-200
#: µs a query against 20-26 (bench/README.md, branch speed17), once a
#: lease, which is once a request when Scrapy hands the scheduler a
#: crawl's start requests one at a time
LEASE = (
    f"SELECT {ROW} WHERE u.status = {QUEUED} AND u.origin = ?"
    " ORDER BY u.depth, u.priority DESC, u.id LIMIT ?"
)
#: what may follow an origin's name in a key stored without it
_AFTER_ORIGIN = frozenset(("", "/", "?", "#"))
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
#: the extra column of nearly every queued link (its Referer header is the
#: page it was found on), stored as a one-character code: 43 bytes less a
#: queued URL, and no JSON to decode when it is leased
_EXTRA_CODES = {_dumps({"meta": {REFERER_HEADER: True}}): "1"}


def extra_text(extra: dict[str, Any]) -> str:
    text = _dumps(extra)
    return _EXTRA_CODES.get(text, text)


def extra_data(text: str) -> dict[str, Any]:
    if text == "1":
        return {"meta": {REFERER_HEADER: True}}  # a new dict: callers keep it
    data: dict[str, Any] = json.loads(text)
    return data


def short_key(key: str, origin: str) -> str:
    """``key`` as its row keeps it: without ``origin`` (``scheme://host``)
    when it begins with it (then it is empty or begins with / ? #); a key
    not beginning with a letter (none of a crawl's: URLs, "HEAD <url>") is
    marked with a "!", so that the two never meet."""
    if key.startswith(origin):
        rest = key[len(origin) :]
        if rest[:1] in _AFTER_ORIGIN:
            return rest
    if key[:1].isascii() and key[:1].isalpha():
        return key
    return "!" + key


def full_key(short: str, origin: str) -> str:
    """The key a row's ``key`` column stands for (``short_key``)."""
    first = short[:1]
    if first.isascii() and first.isalpha():
        return short
    if first == "!":
        return short[1:]
    return origin + short


def create(path: Path) -> None:
    """Make an empty state file of this format at ``path``."""
    # Built aside and renamed into place, so that a crash while creating
    # never leaves an empty file that a later run would take for a state.
    tmp = path.with_name(path.name + ".new")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(str(tmp))
    try:
        db.execute(f"PRAGMA page_size={PAGE_SIZE}")
        # one transaction: each statement of a script is its own
        # otherwise, with its journal's and the file's fsyncs (about 90
        # for the schema, before the first request)
        db.executescript("BEGIN;" + TABLES + INDEXES + RECORDS_SCHEMA)
        db.execute(
            "INSERT INTO meta (name, value) VALUES (?, ?)",
            (META_FORMAT, str(FORMAT_VERSION)),
        )
        db.commit()
    finally:
        db.close()
    os.replace(tmp, path)
