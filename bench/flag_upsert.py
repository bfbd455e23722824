"""Benchmark (not a test): what a second feature's flag of a row costs.

    python bench/flag_upsert.py [--rounds 30]

A record table as the crawl state makes it (1 KiB pages, WAL,
synchronous=FULL, ``WITHOUT ROWID``) with 60,000 rows of waiting links,
then per round: 1,000 new random ``links.waiting``-shaped keys flagged
with a text (the broken-link report's upsert), the same keys flagged again
with another bit (the mirror's), and the commit. Prints the mean ms of
each for 1,000 rows: the second upsert is what SQLiteRecords' "Flags
written behind" saves for every row both features flag before a commit.
"""

from __future__ import annotations

import base64
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from webspider.frontier.sqliterecords import _FLAG, _FLAG_TEXT

ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 30


def code() -> str:
    return base64.urlsafe_b64encode(os.urandom(3)).decode()[:4]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "b.sqlite3")
        db.execute("PRAGMA page_size=1024")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(
            "CREATE TABLE record (key TEXT NOT NULL PRIMARY KEY, value NOT NULL) "
            "WITHOUT ROWID"
        )
        rows = [(f"\x05{code()}\n{code()}", b"1link text") for _ in range(60000)]
        db.executemany("INSERT OR IGNORE INTO record VALUES (?, ?)", rows)
        db.commit()
        first = second = commit = 0.0
        for _ in range(ROUNDS):
            keys = [f"\x05{code()}\n{code()}" for _ in range(1000)]
            t0 = time.perf_counter()
            db.executemany(_FLAG_TEXT, [(k, b"2link text") for k in keys])
            t1 = time.perf_counter()
            db.executemany(_FLAG, [(k, b"1") for k in keys])
            t2 = time.perf_counter()
            db.commit()
            t3 = time.perf_counter()
            first += t1 - t0
            second += t2 - t1
            commit += t3 - t2
        db.close()
    ms = 1000 / ROUNDS
    print(
        f"first upsert {first * ms:.2f} ms, second upsert {second * ms:.2f} ms, "
        f"commit {commit * ms:.2f} ms (1,000 rows, mean of {ROUNDS})"
    )


if __name__ == "__main__":
    main()
