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
    from webspider.frontier import sqliterecords as _records

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

    _wrap(_state.SQLiteState, "commit", "commit")
    _wrap(_state.SQLiteState, "wait_durable", "wait")
    _wrap(_records.SQLiteRecords, "write_flags", "write_flags")
    _wrap(_records.SQLiteWaiting, "write_flags", "write_flags")

    class _Connection(sqlite3.Connection):
        commit = _timed("COMMIT", sqlite3.Connection.commit)

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
