"""Benchmark (not a test): how fast SQLite alone confirms a page's seen links.

    python bench/seen_bound.py                  # 1,000,000 rows
    python bench/seen_bound.py --urls 3000000

Issue 14 asks the seen-set for >= 500,000 membership checks a second with
<= 16 bytes a URL in memory, and exact (no false drops). 16 bytes cannot
hold a URL, so a hit the in-memory filter cannot rule out is confirmed
against the key's row in the store (webspider.frontier.sqlite
``contains_many``: one query a page). This measures the ceiling of that
confirmation: the query alone, with no filter, fingerprinting or key
rebuilding around it. A table of ``--urls`` rows with random 63-bit
fingerprints and path-like keys is written, then pages of ``--batch``
(35) fingerprints, each row asked once ("cold hits", the slow case), are
looked up with the crawl's statement, ``SELECT key, origin FROM url WHERE
fp IN (...) AND status IN (2, 3)``. Rates are looked-up rows a second of
process time, best of three, in a fresh connection (SQLite's page cache
starts empty, the OS's holds the file), for two layouts and two page
sizes:

- ``state``: the crawl state's ``url`` table (rows by id, an index on the
  fingerprint: two B-tree descents a key), as webspider.frontier.sqlite
  lays it out;
- ``by-fp``: a table keyed by (fingerprint, id), ``WITHOUT ROWID`` (one
  descent a key).

And, below any store, the floor of reading one key a cold hit at all: the
keys appended to a flat file (a length byte, then the key), their offsets
held in memory as a filter's slots would have to hold them, each asked key
read back and compared — ``flat-pread`` with ``os.pread`` (one system call
a key, from the OS's page cache), ``flat-mmap`` as a slice of a memory map
of the file (no system call, but every page of the file a check touches
counts in the process's RSS).
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path

_COLUMNS = "status INTEGER, origin INTEGER, depth INTEGER, round INTEGER"
_LAYOUTS = {
    "state": (
        f"CREATE TABLE url (id INTEGER PRIMARY KEY, fp INTEGER NOT NULL,"
        f" key TEXT NOT NULL, {_COLUMNS});"
        "CREATE INDEX url_fp ON url (fp);",
        "INSERT INTO url VALUES (?, ?, ?, 3, 1, 5, 0)",
    ),
    "by-fp": (
        f"CREATE TABLE url (fp INTEGER NOT NULL, id INTEGER NOT NULL,"
        f" key TEXT NOT NULL, {_COLUMNS}, PRIMARY KEY (fp, id)) WITHOUT ROWID;",
        "INSERT INTO url VALUES (?, ?, ?, 3, 1, 5, 0)",
    ),
}


def build(path: Path, layout: str, page_size: int, rows: list[tuple]) -> None:
    schema, insert = _LAYOUTS[layout]
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA page_size = {page_size}")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("BEGIN")
    for statement in schema.split(";"):
        if statement:
            db.execute(statement)
    if layout == "state":
        db.executemany(insert, [(i, fp, key) for fp, i, key in rows])
    else:
        db.executemany(insert, rows)
    db.execute("COMMIT")
    db.close()


def lookups(path: Path, fps: list[int], batch: int) -> float:
    """Rows looked up a second of process time, in a fresh connection."""
    db = sqlite3.connect(path, isolation_level=None)
    statements = {}
    start = time.process_time()
    found = 0
    for at in range(0, len(fps), batch):
        chunk = fps[at : at + batch]
        sql = statements.get(len(chunk))
        if sql is None:
            sql = statements[len(chunk)] = (
                "SELECT key, origin FROM url WHERE fp IN"
                f" ({', '.join('?' * len(chunk))}) AND status IN (2, 3)"
            )
        found += len(db.execute(sql, chunk).fetchall())
    elapsed = time.process_time() - start
    db.close()
    assert found == len(fps), (found, len(fps))
    return len(fps) / elapsed


def flat_lookups(path: Path, asked: list[tuple[int, bytes]], mapped: bool) -> float:
    """Keys read back and compared a second of process time: ``asked`` is
    (offset, key) pairs, the offset of the key's length byte."""
    fd = os.open(path, os.O_RDONLY)
    found = 0
    try:
        if mapped:
            with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as view:
                start = time.process_time()
                for offset, key in asked:
                    size = view[offset]
                    found += view[offset + 1 : offset + 1 + size] == key
                elapsed = time.process_time() - start
        else:
            pread = os.pread
            start = time.process_time()
            for offset, key in asked:
                record = pread(fd, len(key) + 1, offset)
                found += record[0] == len(key) and record[1:] == key
            elapsed = time.process_time() - start
    finally:
        os.close(fd)
    assert found == len(asked), (found, len(asked))
    return len(asked) / elapsed


def flat(tmp: str, rows: list[tuple], rnd: random.Random, checks: int) -> None:
    path = Path(tmp) / "keys.bin"
    offsets = []
    keys = []
    with path.open("wb") as file:
        at = 0
        for _, _, text in rows:
            key = text.encode()
            offsets.append(at)
            keys.append(key)
            file.write(bytes((len(key),)) + key)
            at += 1 + len(key)
    size = os.path.getsize(path)
    for name, mapped in (("flat-pread", False), ("flat-mmap", True)):
        best = 0.0
        for _ in range(3):
            picked = rnd.sample(range(len(rows)), checks)
            asked = [(offsets[i], keys[i]) for i in picked]
            best = max(best, flat_lookups(path, asked, mapped))
        print(f"| {name} | - | {size / len(rows):.0f} | {best:,.0f} |")
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--checks", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=35)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--layouts",
        default="state,by-fp,flat",
        help="which to measure, of state, by-fp, flat (default: all)",
    )
    args = parser.parse_args()
    layouts = set(args.layouts.split(","))
    unknown = layouts - {*_LAYOUTS, "flat"}
    if unknown:
        parser.error(f"unknown layout(s): {', '.join(sorted(unknown))}")
    rnd = random.Random(args.seed)
    rows = [
        (rnd.getrandbits(63), i + 1, f"/d{i % 97}/p{i:07d}/s-{rnd.randrange(10**6)}")
        for i in range(args.urls)
    ]
    print(f"{args.urls:,} rows; {args.checks:,} cold hits in pages of {args.batch}")
    print("| layout | page | file B/row | cold hits/s (best of 3) |")
    print("|---|--:|--:|--:|")
    with tempfile.TemporaryDirectory() as tmp:
        for layout in _LAYOUTS:
            if layout not in layouts:
                continue
            for page_size in (1024, 4096):
                path = Path(tmp) / f"{layout}-{page_size}.db"
                build(path, layout, page_size, rows)
                size = os.path.getsize(path)
                best = 0.0
                for _ in range(3):
                    asked = rnd.sample(rows, args.checks)
                    best = max(best, lookups(path, [r[0] for r in asked], args.batch))
                print(
                    f"| {layout} | {page_size} | {size / args.urls:.0f} | {best:,.0f} |"
                )
                path.unlink()
        if "flat" in layouts:
            flat(tmp, rows, rnd, args.checks)


if __name__ == "__main__":
    main()
