"""Loaded by every Python process whose path holds this folder (commit_cost.py
puts it there for the crawl): with COMMIT_PROBE set to a file, times the crawl
state's commit (wall and thread CPU) and appends the totals to that file when
the process exits. Not part of webspider: a probe, as the bench README says."""

from __future__ import annotations

import atexit
import os
import time
from collections import defaultdict
from typing import Any

if os.environ.get("COMMIT_PROBE"):
    import sqlite3

    from webspider.frontier import sqlite as _state
    from webspider.frontier import sqlitedurability as _durability
    from webspider.frontier import sqliterecords as _records
    from webspider.frontier import sqlitewaiting as _waiting

    _acc: defaultdict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])

    def _timed(label: str, call: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return call(*args, **kwargs)
            finally:
                acc = _acc[label]
                acc[0] += 1
                acc[1] += time.perf_counter() - wall
                acc[2] += time.thread_time() - cpu

        return timed

    def _wrap(cls: Any, name: str, label: str) -> None:
        if hasattr(cls, name):
            setattr(cls, name, _timed(label, getattr(cls, name)))

    if os.environ.get("COMMIT_PROBE_WAL"):  # another log limit, in bytes
        _durability._WAL_BYTES = int(os.environ["COMMIT_PROBE_WAL"])
    if os.environ.get("COMMIT_PROBE_SHARE"):  # another share of the file
        _state._WAL_SHARE = int(os.environ["COMMIT_PROBE_SHARE"])  # type: ignore[attr-defined]
    if os.environ.get("COMMIT_PROBE_JSL"):  # another journal_size_limit
        _connect = _state.SQLiteState._connect

        def _connect_jsl(self: Any) -> Any:
            db = _connect(self)
            db.execute(f"PRAGMA journal_size_limit={os.environ['COMMIT_PROBE_JSL']}")
            return db

        _state.SQLiteState._connect = _connect_jsl  # type: ignore[method-assign]
    _wrap(_state.SQLiteState, "commit", "commit")
    _wrap(_state.SQLiteState, "wait_durable", "wait")
    _wrap(_records.SQLiteRecords, "write_flags", "write_flags")
    _wrap(_waiting.SQLiteWaiting, "write_flags", "write_flags")
    # what runs at a commit (StateScheduler._commit): the features' flushes
    # (crawl_state_committing's handlers), pages.jsonl's fsync and length
    from webspider.frontier import pages as _pages
    from webspider.frontier import scheduler as _scheduler
    from webspider.mirror import store as _mirror
    from webspider.reports import brokenlinks as _broken
    from webspider.reports import crawlreport as _report

    _wrap(_scheduler.StateScheduler, "_commit", "_commit")

    def _handler(cls: Any, name: str, label: str) -> None:
        # a signal's handler: Scrapy passes it only the arguments it names
        call = _timed(label, getattr(cls, name))

        def handler(self: Any, records: Any) -> Any:
            return call(self, records)

        setattr(cls, name, handler)

    _handler(_broken.BrokenLinks, "crawl_state_committing", "broken")
    _handler(_report.CrawlReport, "crawl_state_committing", "report")
    _handler(_mirror.MirrorStore, "state_committing", "mirror")
    _wrap(_pages.PagesFile, "start_sync", "pages_start")
    _wrap(_pages.PagesFile, "sync", "pages_sync")

    _commit = _timed("COMMIT", sqlite3.Connection.commit)

    class _Connection(sqlite3.Connection):
        """COMMIT timed, and sorted by what it wrote to the state file: in
        WAL mode only a checkpoint writes there (``ckpt``: the COMMIT that
        passed the log's limit, its copy and fsyncs), and the next COMMIT
        writes the restarted log's header and fsyncs it (``after``)."""

        _file: str | None = None
        _stamp: tuple[int, int] | None = None
        _restarting = False

        def commit(self) -> None:
            if self._file is None:
                rows = self.execute("PRAGMA database_list").fetchall()
                self._file = next(r[2] for r in rows if r[1] == "main")
            try:
                st = os.stat(self._file)
                before = (st.st_mtime_ns, st.st_size)
            except OSError:
                before = None
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                _commit(self)
            finally:
                wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
                try:
                    st = os.stat(self._file)
                    after = (st.st_mtime_ns, st.st_size)
                except OSError:
                    after = None
                label = (
                    "COMMIT-ckpt"
                    if before is not None and after != before
                    else "COMMIT-after"
                    if self._restarting
                    else "COMMIT-plain"
                )
                self._restarting = label == "COMMIT-ckpt"
                acc = _acc[label]
                acc[0] += 1
                acc[1] += wall
                acc[2] += cpu

    class _Module:
        def __getattr__(self, name: str) -> Any:
            return getattr(sqlite3, name)

        @staticmethod
        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            kwargs.setdefault("factory", _Connection)
            return sqlite3.connect(*args, **kwargs)

    _state.sqlite3 = _Module()  # type: ignore[assignment]

    @atexit.register
    def _report() -> None:
        with open(os.environ["COMMIT_PROBE"], "a") as fh:
            fh.write(
                " ".join(
                    f"{k}:{int(v[0])} {v[1]:.3f}w {v[2]:.3f}c" for k, v in _acc.items()
                )
                + "\n"
            )
