"""Benchmark (not a test): the broken-link ledger alone, memory and CPU.

    PYTHONPATH=/work/main python bench/ledger_store.py      # the in-memory ledger
    PYTHONPATH=$PWD python bench/ledger_store.py            # in the crawl state
    PYTHONPATH=$PWD python bench/ledger_store.py 20000 --no-trace  # CPU alone

A site of --pages pages fed in breadth-first order, as a crawl feeds it:
page *i* answers 2xx, then its links are recorded — 20 pages ahead of it,
3 of 50 broken URLs every page shares and 2 broken URLs of its own; the
broken ones answer 404 a little later. With the crawl state (SQLite, a
temporary file) the ledger is flushed and committed every 32 pages, as the
scheduler does. Prints the Python memory held by the ledger at the end
(tracemalloc: what stays, and the peak), CPU seconds, and the file's size.
tracemalloc slows every allocation down: ``--no-trace`` measures the CPU
without it (and prints no memory figures).
"""

from __future__ import annotations

import inspect
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from webspider.reports.links import LinkLedger, Outcome

_ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
PAGES = int(_ARGS[0]) if _ARGS else 20000
TRACE = "--no-trace" not in sys.argv
BASE = "https://site.example.org/"


def page(i: int) -> str:
    return f"{BASE}p/{i}.html"


def links(i: int) -> list[tuple[str, str, str]]:
    targets = [page(j) for j in range(i + 1, min(PAGES, i + 21))]
    targets += [f"{BASE}gone/s{(i + k) % 50}.html" for k in range(3)]
    targets += [f"{BASE}gone/{i}-{k}.html" for k in range(2)]
    return [(t, f"link {n}", "a") for n, t in enumerate(targets)]


def main() -> None:
    stored = "store" in inspect.signature(LinkLedger).parameters
    with tempfile.TemporaryDirectory() as tmp:
        state = None
        if TRACE:
            tracemalloc.start()
        started = time.process_time()
        if stored:
            from webspider.frontier.sqlite import SQLiteState  # noqa: PLC0415

            state = SQLiteState(Path(tmp) / "state.sqlite3")
            ledger = LinkLedger(state)
        else:
            ledger = LinkLedger()
        broken_later: list[str] = []
        for i in range(PAGES):
            ledger.good(page(i))
            found = links(i)
            ledger.add_page(page(i), found)
            broken_later += [t for t, _, _ in found if "/gone/" in t]
            if i % 32 == 31:
                for url in broken_later:
                    ledger.broken(url, Outcome(url, 404))
                broken_later.clear()
                if state is not None:
                    ledger.flush()
                    state.commit()
        for url in broken_later:
            ledger.broken(url, Outcome(url, 404))
        if state is not None:
            ledger.flush()
            state.commit()
        cpu = time.process_time() - started
        current, peak = tracemalloc.get_traced_memory() if TRACE else (0, 0)
        if TRACE:
            tracemalloc.stop()
        records = sum(1 for _ in ledger.records())
        size = sum(f.stat().st_size for f in Path(tmp).glob("state.sqlite3*"))
        print(
            json.dumps(
                {
                    "ledger": "crawl state" if stored else "memory",
                    "pages": PAGES,
                    "link_instances": PAGES * 25,
                    "broken_urls": records,
                    "cpu_s": round(cpu, 2),
                    "tracemalloc": TRACE,
                    "python_mib_held": round(current / 2**20, 1),
                    "python_mib_peak": round(peak / 2**20, 1),
                    "state_file_mib": round(size / 2**20, 1),
                }
            )
        )
        if state is not None:
            state.close()


if __name__ == "__main__":
    main()
