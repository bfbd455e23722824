"""What closing a finished crawl's state costs at N URLs: time and disk.

    PYTHONPATH=$PWD python bench/scale/compaction.py 100000 300000

Builds a state of N done URLs (synthetic-site keys, queued, leased and
acknowledged through the state's own calls, committed every 1,000 as a
crawl does) with records per URL the size a mirrored crawl leaves (five
namespaces of 16-60 bytes), sets the finished flag and times
``SQLiteState.close()``, while a thread sums the state's files (the
database, its WAL and any copy beside it) as often as it can: the peak
on disk during the close, against the files before it and after.
Run it from the tree to measure (``PYTHONPATH``): the script uses only
the state's public calls, so it runs on older trees too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import META_FINISHED, StoredRequest

BASE = "http://127.0.0.1:50615"
#: namespace, value: about what a mirrored crawl keeps a page
RECORDS = (
    ("bench.index", "x" * 46),
    ("bench.paths", "y" * 16),
    ("bench.content", "z" * 20),
    ("bench.links", "1"),
    ("bench.pages", "1"),
)
BATCH = 1000


def on_disk(folder: Path) -> int:
    total = 0
    for entry in os.scandir(folder):
        if not entry.name.endswith(".lock"):
            with contextlib.suppress(FileNotFoundError):
                total += entry.stat().st_size
    return total


def measure(n: int, folder: Path) -> str:
    path = folder / f"state-{n}.sqlite3"
    state = SQLiteState(path)
    for start in range(0, n, BATCH):
        urls = [f"{BASE}/p/{i // 1000}/{i}.html" for i in range(start, start + BATCH)]
        state.add([StoredRequest(key=url, url=url, depth=1) for url in urls])
        leases = state.lease(BATCH, deadline=1e12, strict=False)
        state.ack([lease.ticket for lease in leases])
        for name, value in RECORDS:
            state.records(name).put_many((url, value) for url in urls)
        state.commit()
    state.set_meta(META_FINISHED, "1")
    state.commit()
    before = on_disk(folder)
    peak, sampling = before, True

    def sample() -> None:
        nonlocal peak
        while sampling:
            peak = max(peak, on_disk(folder))

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    try:
        state.close()
    finally:
        took = time.perf_counter() - started
        sampling = False
        sampler.join()
    after = on_disk(folder)
    return (
        f"{n:,} URLs: state {before / n:.0f} B/URL before the close, peak "
        f"{peak / n:.0f} during it (+{(peak - before) / n:.0f}), {after / n:.0f}"
        f" after; close {took:.2f} s"
    )


def main() -> int:
    sizes = [int(a) for a in sys.argv[1:]] or [100_000]
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            print(measure(n, Path(tmp)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
