"""The embedded crawl state: one SQLite file (standard library), WAL mode.

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

Exact: a row is found by its fingerprint (the index gives every row of it),
and its key compared, so two keys sharing a fingerprint are two rows. In
memory, a KeyFilter of the seen keys
(webspider.frontier.keyfilter: 8 to 12 bytes a key) answers "not seen"
without touching the file; a hit is confirmed against the row. Confirmed
keys are cached (the last 16,384 at most, ``_CONFIRMED_MAX``), and so are
the keys queued here, which are seen from then on: the same navigation links
recur on every page, and most other links point at pages queued lately, so
a page's links seen already cost no query. The filter is rebuilt from the
keys when the state is opened.

Leases are rows of status 2; their deadlines live in memory: the embedded
state has one holder, and when it dies every lease is returned at once
(``release_all``, which opening an existing state does).

Durability. A committed batch survives kill -9 and a power cut alike, and
its COMMIT does not wait for the disk on the crawl's event loop:
``synchronous=NORMAL`` in WAL mode, and an fsync of the log (``-wal``) in a
thread started right after each COMMIT (``_start_sync``), which the next
commit waits for before it begins, and so do ``wait_durable`` and
``close``. The caller commits once ``commit_interval`` seconds passed (1 s),
or ``commit_acks`` acknowledgements when set (``commit_due``; the crawl's
settings WEBSPIDER_STATE_COMMIT_INTERVAL and WEBSPIDER_STATE_COMMIT_PAGES)
and at the moments that matter (a round change, the end, the
acknowledgement of a request fetched again after a kill). A kill takes
back only the batch not committed yet; a power cut that one and at most the
last committed batch, if its fsync had not ended (a few milliseconds after
its COMMIT) — the resumed crawl fetches their pages again.

Why that is as safe as ``synchronous=FULL`` (which fsyncs the log inside
each COMMIT, on the event loop: 0.1-0.8 s of a 4,000-page crawl's wall,
bench/README.md "The COMMIT's fsync off the event loop"), by SQLite's WAL
rules (sqlite.org/wal.html, fileformat2.html "WAL file format"; wal.c):

- A COMMIT in WAL mode is the transaction's frames appended to the log
  with write(), its last frame marked as a commit; ``NORMAL`` only skips
  the fsync that ``FULL`` does then. Once COMMIT returns, the frames are
  in the OS's page cache: a kill -9 of the process cannot lose them (as
  with ``FULL``).
- An fsync of the log file through any descriptor of it writes every frame
  written before it to the disk: the thread's fsync, started after COMMIT
  returned, makes that commit (and every earlier one) durable. The
  descriptor is opened on the log by its name after the first COMMIT and
  kept: this connection keeps the log in place (SQLite deletes it only when
  the last connection closes, and ``journal_size_limit`` truncates it,
  never replaces it).
- A power cut tears the frames not yet on disk. Each frame carries the
  log's salt and a checksum that chains every frame before it; opening the
  state replays the log up to the last commit frame whose chain is intact
  and discards the rest: the torn tail is the batches not fsynced yet, and
  the state is the last durable commit's, never a mix. (The frame after a
  durable commit is never written into a sector that commit's frames
  share without SQLite's power-safe-overwrite assumption, which ``FULL``
  makes too.)
- A checkpoint (the log copied into the state file: ``wal_autocheckpoint``,
  at the COMMIT after the log passes ``_WAL_BYTES``) fsyncs the log before
  it copies and the state file after, under ``NORMAL`` as under ``FULL``
  (only the per-commit fsync differs): nothing is copied into the file
  that is not durable in the log first. The next transaction then writes
  the log again from its start, with a new salt in its header, which SQLite
  fsyncs before any frame of it (under ``NORMAL`` too): a stale frame of
  the old log behind a torn new one has the old salt and is ignored. The
  first commit of the new log cuts the file back to ``_WAL_BYTES``
  (``journal_size_limit``): it removes stale frames past the limit only.
  So a checkpoint's fsyncs stay in the COMMIT that triggers it, as before:
  the only fsyncs left on the event loop. On the 10,000-page synthetic
  site at 128 pages a commit a COMMIT logs ~0.5 MiB, and every second one
  checkpoints (38 of 84 with mirror=0, 54-62 of 89 with the mirror); the
  checkpoints and the new logs' headers take ~0.25 s of the loop (~25 µs a
  page, 1-2 % of the crawl's wall; ``bench/commit_cost.py``); at 100,000
  pages a commit logs ~2 MiB and nearly every one checkpoints (720 of
  771: ~3.4 s of the loop's CPU against a 16 MiB log). A larger log takes
  it back only when it holds several commits — 4 MiB at 10,000 pages,
  16 MiB at 100,000 — and adds that to the state's peak (+300 and +150
  B/URL there); a limit of 1/8 of the file (issue 14's bytes at a
  million URLs allow about 1/64) saved 3 % of the COMMITs' CPU at 100,000.
  Left at 1 MiB (bench/README.md, "The checkpoints on the event loop").
- At most one fsync runs: the next commit waits for it before it writes
  anything, so a power cut takes back at most the batch whose fsync ran and
  the batch being built; an fsync's error (EIO) is raised there, by the
  crawl's next commit, never lost.
- Order with the other files: pages.jsonl's lines are fsynced before the
  commit that records its length (webspider.frontier.pages), so a state
  that a power cut takes back one or two batches names a length the file
  has on disk, and the resumed crawl cuts the file back to it. ``close``
  waits for the last fsync (then SQLite's closing checkpoint fsyncs the log
  and the file too), so a crawl that ended, ``finished`` or paused, is on
  disk when the command returns.
- Where the log cannot be used (``journal_mode=WAL`` refused by the file
  system), the state keeps ``synchronous=FULL`` and no thread.

(``NORMAL`` alone would survive kill -9 too, but a power cut could then lose
every commit since the last checkpoint; ``FULL`` with the COMMIT itself run
in a thread would need the connection idle meanwhile, and the crawl reads
it between any two pages; a checkpoint run by a second connection in the
thread would copy the log, but the log begins again only at a transaction
that starts after a complete checkpoint (wal.c, ``walRestartLog``: the
writer's read lock 0), and the crawl's connection opens its next one at
once: the log would grow instead, without bound — every frame copied, 303
MiB of log after 100 commits of 3 MiB in ``bench/wal_restart.py``;
tests/test_frontier_sqlite.py keeps that premise and the log's bound.)

A finished crawl's state (its flag committed) is read again only for its
metadata: closing it replaces the file with a copy of its metadata alone
(``_compact``).

A ``<file>.lock`` beside the state is flock()ed while it is open: a second
crawl on the same state is refused (StateLockedError), and the OS releases
the lock when the process dies however it dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sqlite3
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from itertools import compress
from operator import not_
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from webspider.frontier.fingerprints import fingerprint, fingerprints
from webspider.frontier.keyfilter import KeyFilter
from webspider.frontier.requestdata import REFERER_HEADER
from webspider.frontier.sqlitehashed import HASHED, SQLiteHashed
from webspider.frontier.sqliterecords import SCHEMA as RECORDS_SCHEMA
from webspider.frontier.sqliterecords import SQLiteRecords, in_marks
from webspider.frontier.sqlitewaiting import SQLiteWaiting
from webspider.frontier.state import (
    FORMAT_VERSION,
    META_FINISHED,
    META_FORMAT,
    Counts,
    Lease,
    StateError,
    StoredRequest,
)
from webspider.storage import failed_write
from webspider.utils.atomic import fsync_folder
from webspider.utils.waitinglinks import NS_WAITING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from concurrent.futures import Future

logger = logging.getLogger(__name__)

#: a done row's status is 0: SQLite stores the integers 0 and 1 in no
#: byte of the row (their type in its header says it), and most rows of a
#: crawl that ran a while are done (3 before format 9: a byte a URL)
QUEUED, LEASED, DONE, DEFERRED = 1, 2, 0, 4
_SEEN = (QUEUED, LEASED, DONE)
_KINDS = {"page": 0, "requisite": 1}
_KIND_NAMES = {v: k for k, v in _KINDS.items()}
#: confirmed seen keys kept (the links every page repeats)
_CONFIRMED_MAX = 1 << 14
#: ids looked up in one query (SQLite allows 32,766 parameters)
_BATCH = 500
#: The log's size after which a commit checkpoints, and the size the log
#: file is cut back to then: 1 MiB. The log peaks at that plus one commit's
#: pages (each commit rewrites in the log every page it touched). 4,096
#: pages made a ~20 MB log — 2,000 B/URL at 10,000 URLs, most of the
#: state's peak — for a checkpoint's fsync saved a few seconds
#: (bench/README.md, "Where the state's bytes go"). A checkpoint does not
#: change durability: SQLite fsyncs the log before it copies (see
#: "Durability" above).
_WAL_BYTES = 1 << 20
#: The page size of a new state file (a state keeps the one it was made
#: with). A commit inserts the links that wait for an outcome (the reports'
#: referrers, the mirror's kept links) at random places of the records'
#: B-tree, ~1 row a page it touches, and the log receives every page it
#: touched whole: with 1 KiB pages instead of SQLite's 4 KiB a commit logs
#: 2.5x fewer bytes (the log's peak at 10,000 pages: 622 -> 264 B/URL), for
#: ~1 % more of the file in page headers and B-tree levels (bench/README.md,
#: "The state's peak").
_PAGE_SIZE = 1024
#: what the durability thread calls on the log's descriptor (a name the
#: tests can wrap to see when it runs)
_fsync = os.fsync

_SCHEMA = """
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
_INDEXES = """
CREATE INDEX url_fp ON url (fp);
CREATE INDEX url_queued ON url (origin, depth, priority DESC) WHERE status = 1;
CREATE INDEX url_deferred ON url (status) WHERE status = 4;
"""
#: a request's row, and its referer's URL (the page it was found on) read
#: in the same query
_ROW = (
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
_LEASE = (
    f"SELECT {_ROW} WHERE u.status = {QUEUED} AND u.origin = ?"
    " ORDER BY u.depth, u.priority DESC, u.id LIMIT ?"
)
#: what may follow an origin's name in a key stored without it
_AFTER_ORIGIN = frozenset(("", "/", "?", "#"))
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
#: the extra column of nearly every queued link (its Referer header is the
#: page it was found on), stored as a one-character code: 43 bytes less a
#: queued URL, and no JSON to decode when it is leased
_EXTRA_CODES = {_dumps({"meta": {REFERER_HEADER: True}}): "1"}


def _extra_text(extra: dict[str, Any]) -> str:
    text = _dumps(extra)
    return _EXTRA_CODES.get(text, text)


def _extra_data(text: str) -> dict[str, Any]:
    if text == "1":
        return {"meta": {REFERER_HEADER: True}}  # a new dict: callers keep it
    data: dict[str, Any] = json.loads(text)
    return data


def _short_key(key: str, origin: str) -> str:
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


def _full_key(short: str, origin: str) -> str:
    """The key a row's ``key`` column stands for (``_short_key``)."""
    first = short[:1]
    if first.isascii() and first.isalpha():
        return short
    if first == "!":
        return short[1:]
    return origin + short


class StateLockedError(StateError):
    """Another process holds the state."""


#: locks this process holds on states for as long as it lives (hold_lock)
_HELD: dict[str, IO[bytes]] = {}


def _acquire(path: Path) -> IO[bytes]:
    lock_path = path.with_name(path.name + ".lock")
    fh = lock_path.open("ab")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise StateLockedError(
            f"{path}: in use by another crawl (locked: {lock_path})"
        ) from None
    return fh


def hold_lock(path: str | Path) -> None:
    """Take the lock of the state at ``path`` until the crawl's state is
    closed (StateLockedError when another process has it): the crawl command
    takes it when it checks the state, so that no other crawl starts between
    the check and the crawl's own opening of the state. A SQLiteState opened
    on that path in this process then uses this lock: a look at the state
    (``release_leases=False``, the check's) leaves it held; the crawl's own
    state takes it over, and releases it when it closes (so an in-process
    crawl leaves no lock file open behind it)."""
    key = os.path.abspath(path)
    if key not in _HELD:
        _HELD[key] = _acquire(Path(path))


def release_held_locks() -> None:
    """Release every lock hold_lock took and no crawl took over (a check
    of the settings without a crawl after it: in-process tests)."""
    for fh in _HELD.values():
        fh.close()
    _HELD.clear()


class SQLiteState:
    """``SQLiteState(path)`` opens (or creates) a crawl state file; see the
    module docstring and webspider.frontier.state.CrawlState."""

    def __init__(
        self,
        path: str | Path,
        *,
        lock: bool = True,
        fresh: bool = False,
        commit_interval: float = 1.0,
        commit_acks: int | None = 128,
        release_leases: bool = True,
    ) -> None:
        """``fresh``: replace any state at ``path`` by an empty one.
        ``release_leases=False``: leave the leases of a dead process as they
        are (a look at the state before the crawl opens it, which releases
        them and counts them as in flight)."""
        self.path = Path(path)
        self._release_leases = release_leases
        self.commit_interval = commit_interval
        #: acknowledged requests after which a commit is due, whatever the
        #: time (None: only the time counts): what a kill can take back is
        #: bounded by count as well as by time (tests/test_e2e_crash.py)
        self.commit_acks = commit_acks
        self._acks = 0
        #: the requests that were in flight when the last holder of the
        #: state died (fetched once already): the acknowledgement of one is
        #: committed at once (``commit_due``), so that a crawl killed again
        #: soon after a resume (before the next commit was due)
        #: does not fetch it a third time
        self._again: set[int] = set()
        self._urgent = False
        #: the log's descriptor the durability thread fsyncs, the thread,
        #: and the fsync it runs for the last commit (see "Durability")
        self._wal_fd: int | None = None
        self._syncer: ThreadPoolExecutor | None = None
        self._syncing: Future[None] | None = None
        #: in WAL mode, committed with synchronous=NORMAL: the log is
        #: fsynced by the thread (False: SQLite's FULL does it in COMMIT)
        self._async_sync = False
        self._lock_file: IO[bytes] | None = self._lock() if lock else None
        if fresh:
            for suffix in ("", "-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        db: sqlite3.Connection | None = None
        try:
            if not self.path.exists():
                self._create()
            self._db = db = self._connect()
            self._load()
        except sqlite3.DatabaseError as exc:
            self._abandon(db)
            if failed_write(exc):  # a full or failing disk, not a damaged file
                raise
            raise StateError(
                # one line: SQLite's message may list damaged pages on several
                f"{self.path}: not a readable crawl state (corrupt or truncated: "
                f"{' '.join(str(exc).split())})"
            ) from None
        except StateError:
            self._abandon(db)
            raise
        self._last_commit = time.monotonic()

    # -- opening ------------------------------------------------------------------
    def _lock(self) -> IO[bytes] | None:
        key = os.path.abspath(self.path)
        if key in _HELD:  # held by this process already (hold_lock)
            return _HELD.pop(key) if self._release_leases else None
        return _acquire(self.path)

    def _abandon(self, db: sqlite3.Connection | None) -> None:
        if db is not None:
            db.close()
        self._close_wal()
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # closing the descriptor releases the flock
            self._lock_file = None

    def _create(self) -> None:
        # Built aside and renamed into place, so that a crash while creating
        # never leaves an empty file that a later run would take for a state.
        tmp = self.path.with_name(self.path.name + ".new")
        tmp.unlink(missing_ok=True)
        db = sqlite3.connect(str(tmp))
        try:
            db.execute(f"PRAGMA page_size={_PAGE_SIZE}")
            # one transaction: each statement of a script is its own
            # otherwise, with its journal's and the file's fsyncs (about 90
            # for the schema, before the first request)
            db.executescript("BEGIN;" + _SCHEMA + _INDEXES + RECORDS_SCHEMA)
            db.execute(
                "INSERT INTO meta (name, value) VALUES (?, ?)",
                (META_FORMAT, str(FORMAT_VERSION)),
            )
            db.commit()
        finally:
            db.close()
        os.replace(tmp, self.path)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path))
        (mode,) = db.execute("PRAGMA journal_mode=WAL").fetchone()
        # the log fsynced by a thread after each COMMIT ("Durability")
        self._async_sync = str(mode).lower() == "wal"
        db.execute(f"PRAGMA synchronous={'NORMAL' if self._async_sync else 'FULL'}")
        # The log is copied into the file (a checkpoint, after the commit
        # that passes the limit) and begins again from its start; the file
        # itself shrinks back to its limit then, or the largest it ever was
        # would stay on disk (see _WAL_BYTES).
        (page_size,) = db.execute("PRAGMA page_size").fetchone()
        db.execute(f"PRAGMA wal_autocheckpoint={_WAL_BYTES // int(page_size)}")
        db.execute(f"PRAGMA journal_size_limit={_WAL_BYTES}")
        return db

    def _load(self) -> None:
        db = self._db
        (check,) = db.execute("PRAGMA quick_check(1)").fetchone()
        if check != "ok":
            raise sqlite3.DatabaseError(check)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        if "meta" not in tables:
            raise StateError(f"{self.path}: not a webspider crawl state")
        version = self.get_meta(META_FORMAT)
        if version != str(FORMAT_VERSION):
            raise StateError(
                f"{self.path}: crawl state of format {version}, this webspider "
                f"reads format {FORMAT_VERSION}"
            )
        if "record" not in tables:  # a state written before records existed
            db.executescript(RECORDS_SCHEMA)
        self._records: dict[str, SQLiteRecords | SQLiteWaiting] = {}
        self._origin_ids: dict[str, int] = {}
        self._origin_names: dict[int, str] = {}
        for oid, name in db.execute("SELECT id, name FROM origin"):
            self._origin_ids[name] = oid
            self._origin_names[oid] = name
        # the process that held the leases is gone
        released = 0
        if self._release_leases:
            self._again = {
                int(row[0])
                for row in db.execute("SELECT id FROM url WHERE status = ?", (LEASED,))
            }
            released = db.execute(
                "UPDATE url SET status = ? WHERE status = ?", (QUEUED, LEASED)
            ).rowcount
        if released:
            db.commit()
        self.released_on_open = released
        by_status = dict(
            db.execute("SELECT status, COUNT(*) FROM url GROUP BY status").fetchall()
        )
        self._counts = {s: int(by_status.get(s, 0)) for s in (QUEUED, DONE, DEFERRED)}
        self._queued_by_origin: Counter[int] = Counter(
            dict(
                db.execute(
                    "SELECT origin, COUNT(*) FROM url WHERE status = ? GROUP BY origin",
                    (QUEUED,),
                ).fetchall()
            )
        )
        (seq,) = db.execute("SELECT COALESCE(MAX(id), 0) FROM url").fetchone()
        self._seq = int(seq)
        seen = self._counts[QUEUED] + self._counts[DONE]
        self._filter = KeyFilter(seen)
        self._add_keys("SELECT key, origin FROM url WHERE status IN (?, ?, ?)", _SEEN)
        self._round = int(self.get_meta("round") or 0)
        self._confirmed: set[str] = set()
        # leases: ticket → (origin id, depth, url), and the deadlines
        self._leases: dict[int, tuple[int, int, str]] = {}
        self._deadlines: dict[int, float] = {}
        self._lease_by_url: dict[str, int] = {}
        self._leased_depths: dict[int, Counter[int]] = {}
        self._turn = 0
        #: this handle set the finished flag: close() compacts the file
        self._finishing = False

    # -- the seen-set -------------------------------------------------------------
    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        if key in self._confirmed:
            return True
        if key not in self._filter:
            return False
        found = self._find(key)
        if found is None or found[1] not in _SEEN:
            return False
        self._confirm(key)
        return True

    def __len__(self) -> int:
        return self._counts[QUEUED] + len(self._leases) + self._counts[DONE]

    def contains_many(self, keys: Sequence[str]) -> list[bool]:
        # A page's links at once. Most are links already seen (the links
        # every page repeats, the pages queued lately): the cache of
        # confirmed keys answers them in one C-level pass; the filter then
        # answers most of the rest (the new links) in one loop, and those it
        # may hold are confirmed in one query.
        confirmed = self._confirmed
        answers = list(map(confirmed.__contains__, keys))
        if False not in answers:
            return answers
        rest = list(compress(range(len(answers)), map(not_, answers)))
        maybe = self._filter.maybe_many([keys[i] for i in rest])
        if True not in maybe:
            return answers
        todo = list(compress(rest, maybe))
        unsure = [keys[i] for i in todo]
        fps = fingerprints(unsure).tolist()
        # every seen row of those fingerprints (two keys may share one)
        found: set[str] = set()
        names = self._origin_names
        for start in range(0, len(fps), _BATCH):
            marks, chunk = in_marks(fps[start : start + _BATCH])
            rows = self._db.execute(
                f"SELECT key, origin FROM url WHERE fp IN ({marks})"
                f" AND status IN {_SEEN}",
                chunk,
            ).fetchall()
            # nearly every key: its origin's name, then its path
            found.update(
                [
                    names[origin] + key
                    if key[:1] == "/"
                    else _full_key(key, names[origin])
                    for key, origin in rows
                ]
            )
        if len(confirmed) + len(todo) > _CONFIRMED_MAX:
            confirmed.clear()
        for i, key in zip(todo, unsure, strict=True):
            seen = key in found
            answers[i] = seen
            if seen:
                confirmed.add(key)
        return answers

    @property
    def memory_bytes(self) -> int:
        """Bytes the in-memory filter of the seen keys holds."""
        return self._filter.nbytes

    def _confirm(self, key: str) -> None:
        if len(self._confirmed) >= _CONFIRMED_MAX:
            self._confirmed.clear()
        self._confirmed.add(key)

    def _find(self, key: str, fp: int | None = None) -> tuple[int, int] | None:
        """(id, status) of ``key``'s row, or None."""
        names = self._origin_names
        for row_id, short, origin, status in self._db.execute(
            "SELECT id, key, origin, status FROM url WHERE fp = ?",
            (fingerprint(key) if fp is None else fp,),
        ):
            if _full_key(short, names[origin]) == key:
                return int(row_id), int(status)
        return None

    def _add_keys(self, query: str, args: Sequence[Any]) -> None:
        """Add the keys of the rows ``query`` gives (key, origin) to the filter."""
        add = self._filter.add
        names = self._origin_names
        for short, origin in self._db.execute(query, args):
            add(_full_key(short, names[origin]))

    # -- the queue ------------------------------------------------------------------
    def add(self, requests: Sequence[StoredRequest]) -> list[bool]:
        return [self._put(request, QUEUED) for request in requests]

    def defer(self, requests: Sequence[StoredRequest]) -> list[bool]:
        return [self._put(request, DEFERRED) for request in requests]

    def _put(self, request: StoredRequest, status: int) -> bool:
        key = request.key
        if key in self._confirmed:
            return False
        fp = fingerprint(key)
        # A key the filter has not got was never queued: most new keys are
        # inserted without a read. Only a deferred row of it may exist, when
        # anything is deferred (the filter holds the seen keys only).
        found = None
        if self._counts[DEFERRED] or key in self._filter:
            found = self._find(key, fp)
        if found is None:
            values = self._values(request, fp, status)
            self._db.execute(
                "INSERT INTO url (id, fp, key, url, status, origin, depth,"
                " round, priority, kind, referer, extra)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            self._stored(key, values[5], status)
            return True
        row_id, old = found
        if old in _SEEN:
            self._confirm(key)
            return False
        if status == DEFERRED:
            return False  # deferred once
        # deferred, then met again within the cap: fetched in this round,
        # after what is queued already (a new id)
        values = self._values(request, fp, status)
        self._db.execute(
            "UPDATE url SET id = ?, fp = ?, key = ?, url = ?, status = ?,"
            " origin = ?, depth = ?, round = ?, priority = ?, kind = ?,"
            " referer = ?, extra = ? WHERE id = ?",
            (*values, row_id),
        )
        self._counts[DEFERRED] -= 1
        self._stored(key, values[5], status)
        return True

    def _stored(self, key: str, origin: int, status: int) -> None:
        self._counts[status] += 1
        if status == QUEUED:
            self._filter.add(key)
            # seen from now on (a queued row is never unseen again): a link
            # to it found later is answered from memory, not by a query
            self._confirm(key)
            self._queued_by_origin[origin] += 1

    def _values(self, request: StoredRequest, fp: int, status: int) -> tuple[Any, ...]:
        extra: dict[str, Any] = {}
        kind = _KINDS.get(request.kind)
        if kind is None:
            kind = 0
            extra["kind"] = request.kind
        referer: int | None = None
        if request.referer is not None:
            # the page a link is found on is leased (in progress) right now
            referer = self._lease_by_url.get(request.referer)
            if referer is None:
                extra["referer"] = request.referer
        if request.method != "GET":
            extra["method"] = request.method
        if request.meta:
            extra["meta"] = dict(request.meta)
        self._seq += 1
        key = request.key
        origin = request.origin
        return (
            self._seq,
            fp,
            _short_key(key, origin),
            None if request.url == key else request.url,
            status,
            self._origin_id(origin),
            request.depth,
            request.round,
            request.priority,
            kind,
            referer,
            _extra_text(extra) if extra else None,
        )

    def _origin_id(self, name: str) -> int:
        oid = self._origin_ids.get(name)
        if oid is None:
            cursor = self._db.execute("INSERT INTO origin (name) VALUES (?)", (name,))
            oid = int(cursor.lastrowid or 0)
            self._origin_ids[name] = oid
            self._origin_names[oid] = name
        return oid

    def _request(self, row: Sequence[Any]) -> StoredRequest:
        (short, url, origin, depth, round_, priority, kind, referer, extra) = row[1:10]
        ref_url, ref_key, ref_origin = row[10:]
        names = self._origin_names
        key = _full_key(short, names[origin])
        data: dict[str, Any] = _extra_data(extra) if extra else {}
        referer_url = data.get("referer")
        if referer is not None:
            if ref_url is not None:
                referer_url = ref_url
            elif ref_key is not None:
                referer_url = _full_key(ref_key, names[ref_origin])
            else:
                referer_url = None
        return StoredRequest(
            key=key,
            url=key if url is None else url,
            depth=depth,
            round=round_,
            referer=referer_url,
            kind=data.get("kind", _KIND_NAMES.get(kind, "page")),
            priority=priority,
            method=data.get("method", "GET"),
            meta=data.get("meta", {}),
        )

    # -- leases ---------------------------------------------------------------------
    def lease(
        self,
        n: int,
        *,
        deadline: float,
        strict: bool = True,
        max_depth: int | None = None,
        skip_origins: Iterable[str] = (),
    ) -> list[Lease]:
        skipped = {self._origin_ids.get(name) for name in skip_origins}
        origins = [o for o, c in self._queued_by_origin.items() if c > 0]
        origins = [o for o in origins if o not in skipped]
        if not origins or n <= 0:
            return []
        # take turns: start after the origin served first last time
        self._turn = (self._turn + 1) % len(origins)
        origins = origins[self._turn :] + origins[: self._turn]
        leases: list[Lease] = []
        progress = True
        while len(leases) < n and progress:
            progress = False
            quota = max(1, (n - len(leases)) // len(origins))
            for origin in origins:
                if len(leases) >= n:
                    break
                if self._queued_by_origin[origin] <= 0:
                    continue  # leased all it had queued: no query to say so
                taken = self._lease_origin(
                    origin, min(quota, n - len(leases)), deadline, strict, max_depth
                )
                if taken:
                    leases += taken
                    progress = True
        return leases

    def _lease_origin(
        self,
        origin: int,
        limit: int,
        deadline: float,
        strict: bool,
        max_depth: int | None,
    ) -> list[Lease]:
        depths = self._leased_depths.get(origin)
        shallowest = min(depths) if depths else None
        rows = self._db.execute(_LEASE, (origin, limit)).fetchall()
        leases = []
        for row in rows:
            depth = row[4]
            if max_depth is not None and depth > max_depth:
                break
            if strict and shallowest is not None and shallowest < depth:
                break  # the level barrier: a shallower page is in progress
            if shallowest is None:
                shallowest = depth
            request = self._request(row)
            ticket = row[0]
            leases.append(Lease(ticket, request, deadline))
            self._leases[ticket] = (origin, depth, request.url)
            self._deadlines[ticket] = deadline
            self._lease_by_url[request.url] = ticket
            self._leased_depths.setdefault(origin, Counter())[depth] += 1
        if leases:
            self._db.executemany(
                "UPDATE url SET status = ? WHERE id = ?",
                [(LEASED, lease.ticket) for lease in leases],
            )
            self._queued_by_origin[origin] -= len(leases)
            self._counts[QUEUED] -= len(leases)
        return leases

    def _end_leases(self, tickets: Iterable[int], status: int) -> list[int]:
        ended = []
        for ticket in tickets:
            held = self._leases.pop(ticket, None)
            if held is None:
                continue
            origin, depth, url = held
            self._deadlines.pop(ticket, None)
            if self._lease_by_url.get(url) == ticket:
                del self._lease_by_url[url]
            depths = self._leased_depths[origin]
            depths[depth] -= 1
            if not depths[depth]:
                del depths[depth]
                if not depths:
                    del self._leased_depths[origin]
            if status == QUEUED:
                self._queued_by_origin[origin] += 1
            self._counts[status] += 1
            ended.append(ticket)
        if status == DONE:
            # a done row is never a request again: what only a request needs
            # (its referer, its meta) would be kept for nothing
            self._db.executemany(
                "UPDATE url SET status = ?, referer = NULL, extra = NULL WHERE id = ?",
                [(status, t) for t in ended],
            )
        else:
            self._db.executemany(
                "UPDATE url SET status = ? WHERE id = ?", [(status, t) for t in ended]
            )
        return ended

    def ack(self, tickets: Iterable[int]) -> None:
        tickets = list(tickets)
        self._acks += len(tickets)
        again = self._again
        if again and not again.isdisjoint(tickets):
            again.difference_update(tickets)
            self._urgent = True
        self._end_leases(tickets, DONE)

    def release(self, tickets: Iterable[int]) -> None:
        self._end_leases(tickets, QUEUED)

    def renew(self, tickets: Iterable[int], deadline: float) -> None:
        for ticket in tickets:
            if ticket in self._deadlines:
                self._deadlines[ticket] = deadline

    def expire(self, now: float) -> int:
        late = [t for t, d in self._deadlines.items() if d < now]
        return len(self._end_leases(late, QUEUED))

    def release_all(self) -> int:
        return len(self._end_leases(list(self._leases), QUEUED))

    def leased_depths(self, origin: str) -> list[int]:
        depths = self._leased_depths.get(self._origin_ids.get(origin, -1), Counter())
        return sorted(depths.elements())

    # -- deferred frontier and rounds ----------------------------------------------
    def deferred_round(self, key: str) -> int | None:
        found = self._find(key)
        if found is None or found[1] != DEFERRED:
            return None
        (round_,) = self._db.execute(
            "SELECT round FROM url WHERE id = ?", (found[0],)
        ).fetchone()
        return int(round_)

    def iter_deferred(self) -> Iterator[StoredRequest]:
        # a cursor of its own, so that reading does not disturb writing
        cursor = self._db.cursor()
        try:
            for row in cursor.execute(
                f"SELECT {_ROW} WHERE u.status = ? ORDER BY u.id", (DEFERRED,)
            ):
                yield self._request(row)
        finally:
            cursor.close()

    @property
    def round(self) -> int:
        return self._round

    def next_round(self) -> int:
        db = self._db
        waiting = db.execute(
            "SELECT origin, COUNT(*) FROM url WHERE status = ? GROUP BY origin",
            (DEFERRED,),
        ).fetchall()
        moved = sum(count for _, count in waiting)
        if not moved:
            return 0
        self._add_keys("SELECT key, origin FROM url WHERE status = ?", (DEFERRED,))
        self._round += 1
        db.execute(
            "UPDATE url SET status = ?, depth = 0, round = ? WHERE status = ?",
            (QUEUED, self._round, DEFERRED),
        )
        for origin, count in waiting:
            self._queued_by_origin[origin] += count
        self._counts[QUEUED] += moved
        self._counts[DEFERRED] = 0
        self.set_meta("round", str(self._round))
        self.commit()  # a round change is a moment that matters
        return int(moved)

    @property
    def queued(self) -> int:
        """``counts().queued``, without building Counts (the engine asks for
        it on every turn of its loop)."""
        return self._counts[QUEUED]

    @property
    def deferred(self) -> int:
        return self._counts[DEFERRED]

    def counts(self) -> Counts:
        return Counts(
            queued=self._counts[QUEUED],
            leased=len(self._leases),
            done=self._counts[DONE],
            deferred=self._counts[DEFERRED],
        )

    # -- records (webspider.records) ---------------------------------------------------
    def records(self, name: str) -> SQLiteRecords | SQLiteWaiting:
        """The namespace of records ``name``, written in this state's
        transaction (``links.waiting`` and the namespaces keyed by hashes,
        ``HASHED``, in tables of their own)."""
        found = self._records.get(name)
        if found is None:
            found = self._records[name] = (
                SQLiteWaiting(self._db, name)
                if name == NS_WAITING
                else SQLiteHashed(self._db, name)
                if name in HASHED
                else SQLiteRecords(self._db, name)
            )
        return found

    # -- metadata and outputs --------------------------------------------------------
    def get_meta(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,))
        found = row.fetchone()
        return None if found is None else str(found[0])

    def set_meta(self, name: str, value: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, value)
        )
        if name == META_FINISHED:
            self._finishing = value == "1"

    def get_offset(self, output: str) -> int:
        return int(self.get_meta(f"offset:{output}") or 0)

    def set_offset(self, output: str, offset: int) -> None:
        self.set_meta(f"offset:{output}", str(offset))

    # -- durability --------------------------------------------------------------------
    def commit(self) -> None:
        """Commit; the batch is durable once ``wait_durable`` returns (the
        next commit's start waits for it)."""
        self.wait_durable()
        for records in self._records.values():
            records.write_flags()  # held until now (SQLiteRecords.flag_many)
        self._db.commit()
        self._start_sync()
        self._last_commit = time.monotonic()
        self._acks = 0
        self._urgent = False

    def _start_sync(self) -> None:
        """fsync the log in the thread: the last COMMIT's frames on disk."""
        if not self._async_sync:
            return
        fd = self._wal_fd
        if fd is None:
            wal = self.path.with_name(self.path.name + "-wal")
            try:
                fd = os.open(wal, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return  # no log yet: no COMMIT wrote a frame to it
            self._wal_fd = fd
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(1, thread_name_prefix="webspider-state")
        self._syncing = self._syncer.submit(_fsync, fd)

    def wait_durable(self) -> None:
        """Wait until the last commit is on disk (its log fsynced by the
        thread); an fsync's error is raised here."""
        syncing = self._syncing
        if syncing is not None:
            self._syncing = None
            syncing.result()

    def _close_wal(self) -> None:
        try:
            self.wait_durable()
        finally:
            if self._syncer is not None:
                self._syncer.shutdown()
                self._syncer = None
            if self._wal_fd is not None:
                os.close(self._wal_fd)
                self._wal_fd = None

    def commit_due(self) -> bool:
        """Whether ``commit_interval`` seconds passed since the last commit,
        a request fetched again after a kill was acknowledged since (see
        ``_again``), or ``commit_acks`` requests were (when set)."""
        return (
            self._urgent
            or time.monotonic() - self._last_commit >= self.commit_interval
            or (self.commit_acks is not None and self._acks >= self.commit_acks)
        )

    def maybe_commit(self) -> bool:
        """Commit when ``commit_interval`` seconds passed since the last one."""
        if time.monotonic() - self._last_commit < self.commit_interval:
            return False
        self.commit()
        return True

    def close(self, keep_lock: bool = False) -> None:
        """Commit and close; ``keep_lock``: the lock stays held by this
        process, for the state opened next on this path (hold_lock)."""
        try:
            with contextlib.suppress(sqlite3.ProgrammingError):
                self.commit()
                self.wait_durable()  # before the file is compacted or closed
                if self._finishing:
                    self._compact()
                self._db.close()
        finally:
            self._close_wal()
        if keep_lock and self._lock_file is not None:
            _HELD[os.path.abspath(self.path)] = self._lock_file
            self._lock_file = None
        self._unlock()

    def abandon(self) -> None:
        """Close without committing, leaving the state as a kill would: what
        was written since the last commit is rolled back, the lock released.
        For a crawl that a write the disk refused stopped
        (webspider.storage): SQLite may have rolled part of the
        transaction back already, and no commit may follow."""
        with contextlib.suppress(sqlite3.Error):
            self._db.rollback()
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        try:
            # the last fsync's error, if any: the crawl stops for one already
            with contextlib.suppress(OSError):
                self._close_wal()
        finally:
            self._unlock()

    def _compact(self) -> None:
        """Give back the space of a crawl that finished (its flag committed).

        Nothing reads a finished state again but its metadata: the next run
        of the command starts a fresh state (resume.open_crawl_state, which
        reads the run's number), and the features wrote what their records
        held to their output files (mirror-state.jsonl, broken-links.jsonl,
        deferred.jsonl, the report) before the flag was set; the pages are
        in pages.jsonl. So only the metadata is copied into a new file (of
        the same schema, its tables otherwise empty), which replaces the
        state: a few KiB, whatever the crawl's size. The queue's rows were
        copied too until 2026-12-03 (53 B/URL kept that nothing read): the
        copy then had the file at its largest and the rows' copy on disk at
        once, which made the end of the crawl the state's peak on disk (~60
        B/URL above the crawl's at a million pages). Not ``DELETE`` and
        VACUUM in place: in WAL mode the delete wrote every page of the
        records to the log (bench/README.md, "The state's peak"), and an
        incremental vacuum of the dropped tables' pages took ~O(n²) (65 s at
        300,000 URLs, 2026-12-03). A kill during any step leaves a finished
        state, the old file or the new one (``os.replace``)."""
        self._finishing = False
        db = self._db
        tmp = self.path.with_name(self.path.name + ".new")
        try:
            tmp.unlink(missing_ok=True)
            (page_size,) = db.execute("PRAGMA page_size").fetchone()
            fresh = sqlite3.connect(str(tmp))
            try:
                fresh.execute(f"PRAGMA page_size={int(page_size)}")
                # one transaction, as in _create (fsynced once, below)
                fresh.executescript("BEGIN;" + _SCHEMA + _INDEXES + RECORDS_SCHEMA)
                fresh.commit()
            finally:
                fresh.close()
            db.execute("ATTACH DATABASE ? AS fresh", (str(tmp),))
            db.execute("INSERT INTO fresh.meta SELECT * FROM main.meta")
            db.commit()
            db.execute("DETACH DATABASE fresh")
            with tmp.open("rb") as fh:  # on disk before it is renamed
                os.fsync(fh.fileno())
            # closed first: the log is copied into the old file and removed
            db.close()
            os.replace(tmp, self.path)
            fsync_folder(self.path.parent)
        except (sqlite3.Error, OSError) as exc:
            # the crawl is over and recorded as such: a full disk costs space only
            with contextlib.suppress(sqlite3.Error):
                db.rollback()
            tmp.unlink(missing_ok=True)
            logger.warning("%s: not compacted (%s)", self.path, exc)
