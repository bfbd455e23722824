"""Benchmark (not a test): the crawl state's seen-set at scale.

    PYTHONPATH=. python bench/seen_scale.py       # tables of 1M and 10M, store of 1M
    PYTHONPATH=. python bench/seen_scale.py --sizes 1000000 --store-urls 0

What a *check* is here: from the URL string (a fresh ``str``, as a page's
links are) to the answer. Fingerprinting the URL is included, as the crawl
pays it; so is, in the store section, confirming a hit against the exact
key in the file. A *batch* is 50 URLs (a page's links: the crawl asks
``contains_many`` once per page, webspider.spiders.webspider.follow_links).

1. The in-memory part, for each of ``--sizes`` (default 1M and 10M): the
   fingerprints of N distinct URLs added to a FingerprintTable (no file).
   Reports its bytes per URL (the table's arrays, and the RSS growth), and
   checks per second, one at a time and in batches, of URLs absent (never
   added: the answer is the table's) and present (the table's hit, before
   the store would confirm it).
2. The store, with ``--store-urls`` URLs (default 1M; 0 skips it) pushed
   through webspider.frontier.sqlite.SQLiteState (queued in batches of
   1,000, committed about once a second, as a crawl does); then checks
   through the state:

   - ``absent``: URLs never added (answered by the in-memory table);
   - ``present_repeated``: the same 1,000 added URLs over and over (the
     navigation links every page repeats; confirmed once, then cached);
   - ``present_cold``: added URLs each checked once (every hit confirmed
     against the file: SQLite's page reads, not the table, set this rate).

   Pushing 10M URLs through the store takes over an hour here (inserts at
   random row ids, each dirtying a page of the file), hence 1M by default;
   what the store keeps in memory per URL is the table of part 1.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from webspider.frontier.fingerprints import FingerprintTable, fingerprint, fingerprints
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import StoredRequest

if TYPE_CHECKING:
    from collections.abc import Callable

BATCH = 50


def rss_kib(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def url(i: int) -> str:
    return f"https://www.example.org/section-{i % 97}/article/{i}?page={i % 7}"


def fresh(indexes: list[int]) -> list[str]:
    """New str objects (no cached hash), as a page's links would be."""
    return [url(i) for i in indexes]


def per_second(run: Callable[[list[str]], object], keys: list[str]) -> int:
    """Checks per second of ``run(keys)``: the best of three, by CPU time
    (the machine is shared; wall time would measure the neighbours)."""
    best = float("inf")
    for _ in range(3):
        copy = [k[:-1] + k[-1] for k in keys]  # fresh strings each time
        started = time.process_time()
        run(copy)
        best = min(best, time.process_time() - started)
    return round(len(keys) / best)


def singly(
    check: Callable[[str], bool], expected: bool
) -> Callable[[list[str]], object]:
    def run(keys: list[str]) -> None:
        assert all(check(k) is expected for k in keys)

    return run


def batched(
    check: Callable[[list[str]], list[bool]], expected: bool
) -> Callable[[list[str]], object]:
    def run(keys: list[str]) -> None:
        for i in range(0, len(keys), BATCH):
            assert all(a is expected for a in check(keys[i : i + BATCH]))

    return run


def table_part(n: int, checks: int) -> dict[str, object]:
    before = rss_kib()
    table = FingerprintTable()
    started = time.perf_counter()
    for start in range(0, n, 10_000):
        for fp in fingerprints([url(i) for i in range(start, min(start + 10_000, n))]):
            table.add(fp)
    added_per_s = n / (time.perf_counter() - started)
    grown = rss_kib() - before
    rng = random.Random(0)
    absent = fresh([n + i for i in range(checks)])
    present = fresh([rng.randrange(n) for _ in range(checks)])

    def one(key: str) -> bool:
        return fingerprint(key) in table

    def many(keys: list[str]) -> list[bool]:
        return table.contains_many(fingerprints(keys))

    return {
        "urls": n,
        "added_per_s": round(added_per_s),
        "table_bytes_per_url": round(table.nbytes / n, 2),
        "rss_growth_bytes_per_url": round(grown * 1024 / n, 2),
        "checks_per_s": {
            "absent": per_second(singly(one, False), absent),
            "absent_batched": per_second(batched(many, False), absent),
            "present": per_second(singly(one, True), present),
            "present_batched": per_second(batched(many, True), present),
            "fingerprint_alone": per_second(
                lambda ks: [fingerprint(k) for k in ks], absent
            ),
        },
    }


def store_part(n: int, checks: int) -> dict[str, object]:
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
        added_per_s = n / (time.perf_counter() - started)
        grown = rss_kib() - base

        def cold(run: Callable[[list[str]], object]) -> Callable[[list[str]], object]:
            def clear_first(keys: list[str]) -> object:
                state._confirmed.clear()  # a cold start, on purpose
                return run(keys)

            return clear_first

        absent = fresh([n + i for i in range(checks)])
        nav = [rng.randrange(n) for _ in range(1000)]
        repeated = fresh([nav[i % 1000] for i in range(checks)])
        cold_n = min(checks, n) // 4
        present = fresh([rng.randrange(n) for _ in range(cold_n)])
        in_state = state.__contains__
        rates = {
            "absent": per_second(singly(in_state, False), absent),
            "absent_batched": per_second(batched(state.contains_many, False), absent),
            "present_repeated": per_second(singly(in_state, True), repeated),
            "present_repeated_batched": per_second(
                batched(state.contains_many, True), repeated
            ),
            "present_cold": per_second(cold(singly(in_state, True)), present),
            "present_cold_batched": per_second(
                cold(batched(state.contains_many, True)), present
            ),
        }
        table_bytes = state.memory_bytes
        state.close()
        disk = sum(p.stat().st_size for p in Path(tmp).iterdir())
    return {
        "urls": n,
        "added_per_s": round(added_per_s),
        "memory_table_bytes_per_url": round(table_bytes / n, 2),
        "rss_growth_bytes_per_url": round(grown * 1024 / n, 2),
        "disk_bytes_per_url": round(disk / n, 1),
        "checks_per_s": rates,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--store-urls", type=int, default=1_000_000)
    parser.add_argument("--checks", type=int, default=200_000)
    args = parser.parse_args()
    report: dict[str, object] = {"batch": BATCH}
    report["table"] = [table_part(int(n), args.checks) for n in args.sizes.split(",")]
    if args.store_urls:
        report["store"] = store_part(args.store_urls, args.checks)
    report["peak_rss_mib"] = round(rss_kib("VmHWM") / 1024, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
