"""Follow a running crawl: its processes' memory and how far it got.

``Sampler(pid, output)`` is a thread that, every ``tick`` seconds, sums the
resident memory of the crawl's process tree (``scrapy crawl`` and its page
worker, found through /proc like bench/run.py's ``TreeRss``) and keeps the
peak; once a ``period`` it records a row: seconds since start, pages
written to ``pages.jsonl`` so far (newlines counted as the file grows, never
re-read), the tree's RSS and the crawl state's bytes on disk. With a
``journal`` path, each row is also appended there as a JSON line when taken,
so a run that is itself killed keeps what it sampled (bench/scale/run.py
``--continue``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from run import TreeRss

STATE_GLOB = ".webspider-state.sqlite3*"


@dataclass
class Row:
    t: float
    pages: int
    rss_kib: int
    state_bytes: int


def state_bytes(output: Path) -> int:
    total = 0
    for path in output.glob(STATE_GLOB):
        with suppress(OSError):  # the WAL went between glob and stat
            total += path.stat().st_size
    return total


class LineCounter:
    """Lines of a file that only grows, counted from where it was left."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.lines = 0

    def count(self) -> int:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                while chunk := fh.read(1 << 20):
                    self.lines += chunk.count(b"\n")
                    self.offset += len(chunk)
        except OSError:
            pass
        return self.lines


class Sampler(threading.Thread):
    def __init__(
        self,
        pid: int,
        output: Path,
        tick: float = 0.2,
        period: float = 1.0,
        *,
        journal: Path | None = None,
        t0: float = 0.0,
    ) -> None:
        super().__init__(daemon=True)
        self.tree = TreeRss(pid)
        self.output = output
        self.tick = tick
        self.period = period
        self.pages = LineCounter(output / "pages.jsonl")
        self.rows: list[Row] = []
        self.peak_kib = 0
        self.peak_state_bytes = 0
        self.final_pages = 0
        self.final_state_bytes = 0
        self.started = time.monotonic() - t0
        self.journal = journal.open("a") if journal else None
        self._done = threading.Event()

    def rss_kib(self) -> int:
        return sum(self.tree._rss_kib(pid) for pid in self.tree._tree())

    def sample(self) -> Row:
        rss = self.rss_kib()
        self.peak_kib = max(self.peak_kib, rss)
        row = Row(
            round(time.monotonic() - self.started, 2),
            self.pages.count(),
            rss,
            state_bytes(self.output),
        )
        self.peak_state_bytes = max(self.peak_state_bytes, row.state_bytes)
        return row

    def run(self) -> None:
        next_row = time.monotonic()
        while not self._done.wait(self.tick):
            now = time.monotonic()
            if now >= next_row:
                self.keep(self.sample())
                next_row += self.period
            else:
                self.peak_kib = max(self.peak_kib, self.rss_kib())

    def stop(self) -> None:
        self._done.set()
        self.join()
        # after the crawl: every page written, the state at rest
        self.final_pages = self.pages.count()
        self.final_state_bytes = state_bytes(self.output)
        # the lines written as the crawl closed: at its exit, no RSS
        t = round(time.monotonic() - self.started, 2)
        self.keep(Row(t, self.final_pages, 0, self.final_state_bytes))
        if self.journal:
            self.journal.close()

    def keep(self, row: Row) -> None:
        self.rows.append(row)
        if self.journal:
            self.journal.write(
                json.dumps([row.t, row.pages, row.rss_kib, row.state_bytes]) + "\n"
            )
            self.journal.flush()
