"""The deferred frontier: URLs found beyond the depth cap, kept on disk.

A link whose depth would exceed the cap is not thrown away (as Scrapy's
DEPTH_LIMIT, wget -l or Heritrix would) but deferred: it waits here until the
round it was found in is over, and then starts the next round at depth 0. On a
large site that is millions of URLs, so they live in SQLite (standard
library), not in Python objects: memory stays at SQLite's page cache however
long the frontier grows (bench/frontier_memory.py shows it).

One row per canonical URL, so a URL deferred from many pages is deferred
once. Rows are numbered in the order they were deferred and carry the round
they were deferred in; since rounds only go forward, the rows waiting for a
round are always the oldest ones, and ``take`` reads them from the front.
A small ``state`` table keeps crawl-wide numbers (the current round) next to
the rows, so that a paused job (JOBDIR) resumes with both intact.

Pure: imports nothing from Scrapy; tested with plain tables.
"""

from __future__ import annotations

import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Commit after this many changes. Committing is only needed for a clean stop
#: (JOBDIR survives only that), but an open transaction grows SQLite's journal.
COMMIT_EVERY = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS deferred (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    url TEXT NOT NULL,
    depth INTEGER NOT NULL,
    referer TEXT,
    round INTEGER NOT NULL,
    kind TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS state (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
_COLUMNS = "id, key, url, depth, referer, round, kind"


@dataclass(frozen=True)
class DeferredURL:
    """A URL waiting in the frontier."""

    #: de-duplication key (the canonical URL)
    key: str
    #: URL as found
    url: str
    #: the depth it would have had in the round it was found in
    depth: int
    #: page it was found on
    referer: str | None
    #: round it was found (and deferred) in
    round: int
    #: link kind ("page" or "requisite")
    kind: str = "page"


class DeferredFrontier:
    """``DeferredFrontier(path)`` opens (or creates) a frontier file;
    ``DeferredFrontier.temporary()`` one that is deleted on ``close()``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._db = sqlite3.connect(str(self.path))
        self._db.execute("PRAGMA journal_mode=WAL")
        # A clean stop commits; after a crash JOBDIR cannot resume anyway
        # (Scrapy's request queue is lost), so there is no point in fsyncs.
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.executescript(_SCHEMA)
        (self._count,) = self._db.execute("SELECT COUNT(*) FROM deferred").fetchone()
        self._changes = 0

    @classmethod
    def temporary(cls) -> DeferredFrontier:
        tmpdir = tempfile.TemporaryDirectory(prefix="webspider-frontier-")
        frontier = cls(Path(tmpdir.name) / "frontier.sqlite3")
        frontier._tmpdir = tmpdir
        return frontier

    def __len__(self) -> int:
        return int(self._count)

    def add(self, entry: DeferredURL) -> bool:
        """Defer a URL; False when its key is already waiting."""
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO deferred (key, url, depth, referer, round, kind)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (entry.key, entry.url, entry.depth, entry.referer, entry.round, entry.kind),
        )
        if cursor.rowcount != 1:
            return False
        self._count += 1
        self._changed()
        return True

    def __contains__(self, key: object) -> bool:
        return self.round_of(str(key)) is not None

    def round_of(self, key: str) -> int | None:
        """The round ``key`` was deferred in, None when it is not waiting."""
        row = self._db.execute("SELECT round FROM deferred WHERE key = ?", (key,))
        found = row.fetchone()
        return None if found is None else int(found[0])

    def waiting_before(self, round_: int) -> bool:
        """Whether URLs deferred before ``round_`` are waiting."""
        row = self._db.execute("SELECT round FROM deferred ORDER BY id LIMIT 1")
        first = row.fetchone()
        return first is not None and first[0] < round_

    def take(self, round_: int, limit: int) -> list[DeferredURL]:
        """Remove and return up to ``limit`` of the oldest URLs deferred
        before ``round_`` (the seeds of round ``round_``)."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM deferred ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        taken = [row for row in rows if row[5] < round_]
        if not taken:
            return []
        self._db.execute("DELETE FROM deferred WHERE id <= ?", (taken[-1][0],))
        self._count -= len(taken)
        self._changed(len(taken))
        return [DeferredURL(*row[1:]) for row in taken]

    def __iter__(self) -> Iterator[DeferredURL]:
        """Every waiting URL, oldest first (streamed, not loaded at once)."""
        for row in self._db.execute(f"SELECT {_COLUMNS} FROM deferred ORDER BY id"):
            yield DeferredURL(*row[1:])

    def get_state(self, name: str, default: int = 0) -> int:
        row = self._db.execute("SELECT value FROM state WHERE name = ?", (name,))
        found = row.fetchone()
        return int(found[0]) if found is not None else default

    def set_state(self, name: str, value: int) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)", (name, value)
        )
        self._changed()

    def commit(self) -> None:
        self._db.commit()
        self._changes = 0

    def close(self) -> None:
        self.commit()
        self._db.close()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def _changed(self, n: int = 1) -> None:
        self._changes += n
        if self._changes >= COMMIT_EVERY:
            self.commit()
