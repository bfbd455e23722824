"""The embedded crawl state: one SQLite file (standard library), WAL mode:
``SQLiteState``, the queue, the seen-set, the leases and the rounds kept in
its tables, and the records' namespaces opened on its connection.

Beside it: the file's tables and formats, and how a request is kept in a
row (webspider.frontier.sqliteschema); the connection's durability and the
log's fsync thread (webspider.frontier.sqlitedurability); the lock
(webspider.frontier.sqlitelock); a finished state's compaction
(webspider.frontier.sqlitecompact); the records' stores
(webspider.frontier.sqliterecords, sqlitehashed, sqlitewaiting).

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

A committed batch survives kill -9 and a power cut alike, and its COMMIT
does not wait for the disk on the crawl's event loop (the argument is in
webspider.frontier.sqlitedurability). The caller commits once
``commit_interval`` seconds passed (1 s), or ``commit_acks``
acknowledgements when set (``commit_due``; the crawl's settings
WEBSPIDER_STATE_COMMIT_INTERVAL and WEBSPIDER_STATE_COMMIT_PAGES) and at
the moments that matter (a round change, the end, the acknowledgement of a
request fetched again after a kill).

A finished crawl's state (its flag committed) is read again only for its
metadata: closing it replaces the file with a copy of its metadata alone
(webspider.frontier.sqlitecompact).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections import Counter
from itertools import compress
from operator import not_
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from webspider.frontier.fingerprints import fingerprint, fingerprints
from webspider.frontier.keyfilter import KeyFilter
from webspider.frontier.sqlitecompact import compact
from webspider.frontier.sqlitedurability import LogSync, connect
from webspider.frontier.sqlitehashed import HASHED, SQLiteHashed
from webspider.frontier.sqlitelock import HELD, acquire
from webspider.frontier.sqliterecords import SCHEMA as RECORDS_SCHEMA
from webspider.frontier.sqliterecords import SQLiteRecords, in_marks
from webspider.frontier.sqliteschema import (
    DEFERRED,
    DONE,
    KIND_NAMES,
    KINDS,
    LEASE,
    LEASED,
    QUEUED,
    ROW,
    SEEN,
    create,
    extra_data,
    extra_text,
    full_key,
    short_key,
)
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
from webspider.utils.waitinglinks import NS_WAITING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

logger = logging.getLogger(__name__)

#: confirmed seen keys kept (the links every page repeats)
_CONFIRMED_MAX = 1 << 14
#: ids looked up in one query (SQLite allows 32,766 parameters)
_BATCH = 500


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
        #: the log's fsync in a thread after each commit
        #: (webspider.frontier.sqlitedurability)
        self._log = LogSync(self.path)
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
        if key in HELD:  # held by this process already (hold_lock)
            return HELD.pop(key) if self._release_leases else None
        return acquire(self.path)

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
        create(self.path)

    def _connect(self) -> sqlite3.Connection:
        db, self._async_sync = connect(self.path)
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
        self._add_keys("SELECT key, origin FROM url WHERE status IN (?, ?, ?)", SEEN)
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
        if found is None or found[1] not in SEEN:
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
                f" AND status IN {SEEN}",
                chunk,
            ).fetchall()
            # nearly every key: its origin's name, then its path
            found.update(
                [
                    names[origin] + key
                    if key[:1] == "/"
                    else full_key(key, names[origin])
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
            if full_key(short, names[origin]) == key:
                return int(row_id), int(status)
        return None

    def _add_keys(self, query: str, args: Sequence[Any]) -> None:
        """Add the keys of the rows ``query`` gives (key, origin) to the filter."""
        add = self._filter.add
        names = self._origin_names
        for short, origin in self._db.execute(query, args):
            add(full_key(short, names[origin]))

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
        if old in SEEN:
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
        kind = KINDS.get(request.kind)
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
            short_key(key, origin),
            None if request.url == key else request.url,
            status,
            self._origin_id(origin),
            request.depth,
            request.round,
            request.priority,
            kind,
            referer,
            extra_text(extra) if extra else None,
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
        key = full_key(short, names[origin])
        data: dict[str, Any] = extra_data(extra) if extra else {}
        referer_url = data.get("referer")
        if referer is not None:
            if ref_url is not None:
                referer_url = ref_url
            elif ref_key is not None:
                referer_url = full_key(ref_key, names[ref_origin])
            else:
                referer_url = None
        return StoredRequest(
            key=key,
            url=key if url is None else url,
            depth=depth,
            round=round_,
            referer=referer_url,
            kind=data.get("kind", KIND_NAMES.get(kind, "page")),
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
        rows = self._db.execute(LEASE, (origin, limit)).fetchall()
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
                f"SELECT {ROW} WHERE u.status = ? ORDER BY u.id", (DEFERRED,)
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
        if self._async_sync:
            self._log.start()
        self._last_commit = time.monotonic()
        self._acks = 0
        self._urgent = False

    def wait_durable(self) -> None:
        """Wait until the last commit is on disk (its log fsynced by the
        thread); an fsync's error is raised here."""
        self._log.wait()

    def _close_wal(self) -> None:
        try:
            self.wait_durable()
        finally:
            self._log.close()

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
            HELD[os.path.abspath(self.path)] = self._lock_file
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
        """Give back the space of a crawl that finished (its flag committed):
        the file replaced by a copy of its metadata (sqlitecompact)."""
        self._finishing = False
        compact(self._db, self.path)
