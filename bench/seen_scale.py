"""Benchmark (not a test): the crawl state's seen-set at scale.

    PYTHONPATH=. python bench/seen_scale.py [--urls 10000000] [--checks 1000000]
    PYTHONPATH=. python bench/seen_scale.py --table-only [--urls 10000000]

Pushes N distinct URLs through webspider.frontier.sqlite.SQLiteState (queued
in batches of 1,000, committed about once a second, as a crawl does), then
measures membership checks:

- ``absent``: URLs never added (answered by the in-memory fingerprint table);
- ``present, repeated``: the same 1,000 added URLs over and over (the
  navigation links every page repeats; confirmed once, then cached);
- ``present, cold``: added URLs each checked once, one at a time (every hit
  confirmed against the file) and in batches of 100 (``contains_many``, as a
  page's links would be).

``--table-only`` measures the in-memory part alone (fingerprints of N URLs
added to a FingerprintTable, no file): its bytes per URL by tracemalloc, and
absent / present checks per second against it.

Reports bytes per URL of the in-memory fingerprint table (its array, which is
all the seen-set keeps in memory per URL), the process's RSS growth per URL
over the run (the SQLite page cache is bounded and included), and the state
file's bytes per URL on disk.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import tracemalloc
from pathlib import Path

from webspider.frontier.fingerprints import FingerprintTable, fingerprint
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import StoredRequest


def rss_kib(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def url(i: int) -> str:
    return f"https://www.example.org/section-{i % 97}/article/{i}?page={i % 7}"


def rate(n: int, started: float) -> float:
    return n / (time.perf_counter() - started)


def table_only(n: int, checks: int, traced: bool) -> dict[str, object]:
    # tracemalloc is exact but slows the adds tenfold: RSS growth otherwise
    if traced:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0] if traced else rss_kib() * 1024
    table = FingerprintTable()
    started = time.perf_counter()
    for i in range(n):
        table.add(fingerprint(url(i)))
    added_per_s = rate(n, started)
    if traced:
        held, peak = (x - before for x in tracemalloc.get_traced_memory())
        tracemalloc.stop()
    else:
        held = rss_kib() * 1024 - before
        peak = rss_kib("VmHWM") * 1024 - before
    absent = [fingerprint(url(n + i)) for i in range(checks)]
    present = [fingerprint(url(i * (n // checks or 1) % n)) for i in range(checks)]
    started = time.perf_counter()
    assert not any(fp in table for fp in absent)
    absent_per_s = rate(checks, started)
    started = time.perf_counter()
    assert all(fp in table for fp in present)
    present_per_s = rate(checks, started)
    keys = [url(n + i) for i in range(checks)]
    started = time.perf_counter()
    assert not any(fingerprint(k) in table for k in keys)
    hashed_per_s = rate(checks, started)
    return {
        "urls": n,
        "added_per_s": round(added_per_s),
        "table_bytes_per_url": round(table.nbytes / n, 2),
        "measured_by": "tracemalloc" if traced else "RSS",
        "held_bytes_per_url": round(held / n, 2),
        "peak_bytes_per_url": round(peak / n, 2),
        "checks_per_s": {
            "absent_fingerprint": round(absent_per_s),
            "present_fingerprint": round(present_per_s),
            "absent_url_hashed": round(hashed_per_s),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--checks", type=int, default=1_000_000)
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    n, checks = args.urls, args.checks
    if args.table_only:
        print(json.dumps(table_only(n, checks, args.tracemalloc), indent=2))
        return
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="seen-scale-") as tmp:
        path = Path(tmp) / "state.sqlite3"
        state = SQLiteState(path)
        base = rss_kib()
        started = time.perf_counter()
        for start in range(0, n, 1000):
            batch = []
            for i in range(start, min(start + 1000, n)):
                u = url(i)
                batch.append(StoredRequest(key=u, url=u, depth=i % 6))
            state.add(batch)
            state.maybe_commit()
        state.commit()
        added_per_s = rate(n, started)
        grown = rss_kib() - base

        absent = [url(n + i) for i in range(checks)]
        started = time.perf_counter()
        found = sum(1 for k in absent if k in state)
        absent_per_s = rate(checks, started)
        assert found == 0

        nav = [url(rng.randrange(n)) for _ in range(1000)]
        repeated = [nav[i % 1000] for i in range(checks)]
        started = time.perf_counter()
        assert all(k in state for k in repeated)
        repeated_per_s = rate(checks, started)

        cold_n = min(checks, n) // 2
        cold = [url(rng.randrange(n)) for _ in range(cold_n)]
        state._confirmed.clear()  # a cold start, on purpose
        started = time.perf_counter()
        assert all(k in state for k in cold)
        cold_per_s = rate(cold_n, started)
        cold = [url(rng.randrange(n)) for _ in range(cold_n)]
        state._confirmed.clear()
        started = time.perf_counter()
        for i in range(0, cold_n, 100):
            assert all(state.contains_many(cold[i : i + 100]))
        cold_batch_per_s = rate(cold_n, started)

        table_bytes = state.memory_bytes
        state.close()
        disk = sum(p.stat().st_size for p in Path(tmp).iterdir())
    print(
        json.dumps(
            {
                "urls": n,
                "added_per_s": round(added_per_s),
                "memory_table_bytes_per_url": round(table_bytes / n, 2),
                "rss_growth_bytes_per_url": round(grown * 1024 / n, 2),
                "peak_rss_mib": round(rss_kib("VmHWM") / 1024, 1),
                "disk_bytes_per_url": round(disk / n, 1),
                "checks_per_s": {
                    "absent": round(absent_per_s),
                    "present_repeated": round(repeated_per_s),
                    "present_cold": round(cold_per_s),
                    "present_cold_batched_100": round(cold_batch_per_s),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
