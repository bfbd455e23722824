"""Benchmark (not a test): does a checkpoint run by a second connection in a
thread keep the crawl state's log bounded? (bench/README.md, "The
checkpoints on the event loop").

    python bench/wal_restart.py [--commits 300] [--rows 600] [--folder /tmp]

Writes as the crawl's connection does (Python's sqlite3, its implicit BEGIN
at the first statement that changes a row, WAL mode, synchronous=NORMAL,
``journal_size_limit`` 1 MiB): ``--commits`` transactions of ``--rows``
rows of 1 KiB at random places of a table, the next transaction's first
write right after each COMMIT, as the crawl's next acknowledgement or lease
comes. Three ways to checkpoint:

- ``auto``: SQLite's autocheckpoint at 1 MiB in the COMMIT (webspider's);
- ``thread``: autocheckpoint off, a PASSIVE checkpoint by a second
  connection in a thread started after each COMMIT (the writer waits for
  it before its next COMMIT, as the state's fsync thread is waited for);
- ``thread-idle``: the same, but the writer's next transaction begins only
  once the thread's checkpoint ended (what the crawl cannot do: it reads
  and writes between any two pages).

Prints the log's largest size and its size at the end, and the checkpoints'
results (busy, log frames, frames copied).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import tempfile
import threading
from pathlib import Path


def run(mode: str, folder: Path, commits: int, rows: int) -> dict[str, int]:
    path = folder / f"{mode}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    db = sqlite3.connect(path, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA wal_autocheckpoint={256 if mode == 'auto' else 0}")
    db.execute(f"PRAGMA journal_size_limit={1 << 20}")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
    db.commit()
    other = sqlite3.connect(path, check_same_thread=False)
    rng = random.Random(14)
    largest, last = 0, (0, 0, 0)
    wal = Path(f"{path}-wal")
    results: list[tuple[int, int, int]] = []
    checkpoint: threading.Thread | None = None

    def copy() -> None:
        results.append(other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())

    for _ in range(commits):
        for _ in range(rows):
            db.execute(
                "INSERT OR REPLACE INTO t VALUES (?, ?)",
                (rng.randrange(1 << 20), os.urandom(1024)),
            )
        if checkpoint is not None:
            checkpoint.join()
        db.commit()
        if mode != "auto":
            checkpoint = threading.Thread(target=copy)
            checkpoint.start()
            if mode == "thread-idle":
                checkpoint.join()
        # the next transaction begins at once (the crawl's next write)
        db.execute("INSERT OR REPLACE INTO t VALUES (0, x'00')")
        largest = max(largest, wal.stat().st_size)
    if checkpoint is not None:
        checkpoint.join()
    db.commit()
    last = results[-1] if results else last
    size = wal.stat().st_size
    other.close()
    db.close()
    return {
        "largest": largest,
        "end": size,
        "busy": last[0],
        "log": last[1],
        "copied": last[2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--rows", type=int, default=600)
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        for mode in ("auto", "thread", "thread-idle"):
            got = run(mode, Path(tmp), args.commits, args.rows)
            print(
                f"{mode:12} log largest {got['largest'] / 2**20:8.1f} MiB, "
                f"at the end {got['end'] / 2**20:8.1f} MiB; last checkpoint: "
                f"busy {got['busy']}, {got['log']} frames, {got['copied']} copied",
                flush=True,
            )


if __name__ == "__main__":
    main()
