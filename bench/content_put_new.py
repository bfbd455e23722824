"""Benchmark (not a test): the duplicates ledger's insert a page, or a read.

    PYTHONPATH=<checkout> python bench/content_put_new.py put_new held [--cache KIB]

A real SQLiteState in a temporary directory with 150,000 other rows (the
waiting links' shape), then 4,000 "pages": each writes 35 other rows (its
links) and asks ``reports.content`` whether its content key is new, and
the state commits every 32 pages. ``put_new``: what
webspider.reports.duplicates does, one ``INSERT OR IGNORE`` a page.
``held``: a read a page (``get``), the new keys held and written with
``put_new_many`` before the commit — what batching the ledger's rows
into the commit would cost. Prints µs a page of the ledger's part only
(the commit and the other rows are not timed). ``--cache`` sets SQLite's
page cache of the state's connection to that many KiB first.
See bench/README.md, branch ``perpage17``.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from binascii import b2a_base64
from pathlib import Path

from webspider.frontier.sqlite import SQLiteState

PAGES = 4000
OTHER_ROWS = 150_000
rnd = random.Random(1)


def key() -> str:
    return "e" + b2a_base64(rnd.randbytes(12), newline=False).decode()


def run(mode: str, cache: int | None) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        state = SQLiteState(Path(tmp) / "s.sqlite3")
        if cache:
            state._db.execute(f"PRAGMA cache_size=-{cache}")
        other = state.records("links.waiting")
        for _ in range(0, OTHER_ROWS, 1000):
            other.put_many([(key(), "1x") for _ in range(1000)])
            state.commit()
        content = state.records("reports.content")
        spent = 0.0
        held: dict[str, str] = {}
        for page in range(PAGES):
            mine = key()
            other.put_many([(key(), "1x") for _ in range(35)])
            start = time.perf_counter()
            if mode == "put_new":
                content.put_new(mine, "abcd")
            elif mine not in held and content.get(mine) is None:
                held[mine] = "abcd"
            spent += time.perf_counter() - start
            if page % 32 == 31:
                start = time.perf_counter()
                if held:
                    content.put_new_many(sorted(held.items()))
                    held.clear()
                spent += time.perf_counter() - start
                state.commit()
        state.close()
    return spent / PAGES * 1e6


def main() -> None:
    args = sys.argv[1:]
    cache = None
    if "--cache" in args:
        at = args.index("--cache")
        cache = int(args[at + 1])
        del args[at : at + 2]
    for mode in args or ["put_new", "held"]:
        print(f"{mode}: {run(mode, cache):.1f} µs a page")


if __name__ == "__main__":
    main()
