"""Durability of the embedded crawl state: how its connection writes (WAL
mode, ``synchronous=NORMAL``, the log's checkpoints and size: ``connect``)
and the thread that fsyncs the log after each COMMIT (``LogSync``), so that
a committed batch survives a power cut without the COMMIT waiting for the
disk on the crawl's event loop.

Apart from webspider.frontier.sqlite because it is the one argument of
safety (SQLite's WAL rules, below) and the one thread of the state;
SQLiteState.commit, wait_durable and close call it.

Durability. A committed batch survives kill -9 and a power cut alike, and
its COMMIT does not wait for the disk on the crawl's event loop:
``synchronous=NORMAL`` in WAL mode, and an fsync of the log (``-wal``) in a
thread started right after each COMMIT (``LogSync.start``), which the next
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

Pure: standard library only.
"""

from __future__ import annotations

import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future
    from pathlib import Path

#: The log's size after which a commit checkpoints, and the size the log
#: file is cut back to then: 1 MiB. The log peaks at that plus one commit's
#: pages (each commit rewrites in the log every page it touched). 4,096
#: pages made a ~20 MB log — 2,000 B/URL at 10,000 URLs, most of the
#: state's peak — for a checkpoint's fsync saved a few seconds
#: (bench/README.md, "Where the state's bytes go"). A checkpoint does not
#: change durability: SQLite fsyncs the log before it copies (see
#: "Durability" above).
_WAL_BYTES = 1 << 20
#: what the durability thread calls on the log's descriptor (a name the
#: tests can wrap to see when it runs)
_fsync = os.fsync


def connect(path: Path) -> tuple[sqlite3.Connection, bool]:
    """A connection to the state file at ``path``, and whether it is in WAL
    mode: then committed with ``synchronous=NORMAL``, its log fsynced by
    ``LogSync`` (else SQLite's FULL fsyncs in COMMIT)."""
    db = sqlite3.connect(str(path))
    (mode,) = db.execute("PRAGMA journal_mode=WAL").fetchone()
    # the log fsynced by a thread after each COMMIT ("Durability")
    wal = str(mode).lower() == "wal"
    db.execute(f"PRAGMA synchronous={'NORMAL' if wal else 'FULL'}")
    # The log is copied into the file (a checkpoint, after the commit
    # that passes the limit) and begins again from its start; the file
    # itself shrinks back to its limit then, or the largest it ever was
    # would stay on disk (see _WAL_BYTES).
    (page_size,) = db.execute("PRAGMA page_size").fetchone()
    db.execute(f"PRAGMA wal_autocheckpoint={_WAL_BYTES // int(page_size)}")
    db.execute(f"PRAGMA journal_size_limit={_WAL_BYTES}")
    return db, wal


class LogSync:
    """The fsync of the log (``-wal``) of the state at ``path``, in a thread:
    ``start`` after a COMMIT, ``wait`` before the next (its error raised
    there), ``close`` at the end."""

    __slots__ = ("_fd", "_path", "_syncer", "_syncing")

    def __init__(self, path: Path) -> None:
        self._path = path
        #: the log's descriptor the thread fsyncs, the thread, and the
        #: fsync it runs for the last commit
        self._fd: int | None = None
        self._syncer: ThreadPoolExecutor | None = None
        self._syncing: Future[None] | None = None

    def start(self) -> None:
        """fsync the log in the thread: the last COMMIT's frames on disk."""
        fd = self._fd
        if fd is None:
            wal = self._path.with_name(self._path.name + "-wal")
            try:
                fd = os.open(wal, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return  # no log yet: no COMMIT wrote a frame to it
            self._fd = fd
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(1, thread_name_prefix="webspider-state")
        self._syncing = self._syncer.submit(_fsync, fd)

    def wait(self) -> None:
        """Wait until the last fsync ended; its error is raised here."""
        syncing = self._syncing
        if syncing is not None:
            self._syncing = None
            syncing.result()

    def close(self) -> None:
        """Stop the thread and close the log's descriptor (``wait`` first)."""
        if self._syncer is not None:
            self._syncer.shutdown()
            self._syncer = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
