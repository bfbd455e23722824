"""Benchmark (not a test): the crawl state's seen-set at 10 million URLs.

    PYTHONPATH=. python bench/seen_scale.py                 # 10M URLs (~45 min here)
    PYTHONPATH=. python bench/seen_scale.py --urls 1000000  # quicker
    PYTHONPATH=. python bench/seen_scale.py --filter-only   # no store

What a *check* is here: from the URL string (a fresh ``str``, as a page's
links are) to the exact answer, through the path the crawl uses: the
spider asks ``seen_many(state, keys)`` once per page
(webspider.spiders.webspider.follow_links), that is
``SQLiteState.contains_many`` with the page's links, ``--batch`` of them
(default 35: pages of 20-50 links). Rates are checks per second of process
time, best of three (the machine is shared: wall time would measure the
neighbours).

1. The filter alone (webspider.frontier.keyfilter), the N URLs added one by
   one as a crawl adds them (so grown, not sized in advance): its bytes per
   URL (its array, exact) and the RSS growth; checks of URLs absent and
   present (the filter's "maybe", before the store confirms it).
2. The store: a state file of N queued URLs (the first 10,000 added
   through SQLiteState.add, the rest written as the rows ``add`` writes, in
   the order of their ids: see ``build_store``). Then a *fresh process*
   opens the state as a resumed crawl does (the filter rebuilt from the
   keys) and checks, through ``contains_many``:

   - ``absent``: URLs never added (the filter answers: no file access);
   - ``present_repeated``: the same 1,000 added URLs again and again (the
     navigation links every page repeats: confirmed once, then cached);
   - ``present_cold``: added URLs each checked once (each hit confirmed
     against its row in the file: SQLite's reads set this rate);
   - ``page``: pages of one new link and the rest seen, a third of those
     repeated navigation links and two thirds cold, as a synthetic site's
     breadth-first crawl meets them.

   Memory of that process: the filter's bytes (exact) and the RSS growth
   from before the state is opened to after the checks (the filter, SQLite's
   page cache, the confirmed-keys cache, the pages of the state file mapped
   and touched; and the fresh copies of the checked URLs that each round
   makes: ~22 MB, 22 B/URL at 1M, 2 at 10M), per URL; and the growth of
   RssAnon alone, the process's own memory without the file's pages.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from webspider.frontier.fingerprints import fingerprints
from webspider.frontier.keyfilter import KeyFilter
from webspider.frontier.seen import seen_many
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import StoredRequest

if TYPE_CHECKING:
    from collections.abc import Callable


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


def per_second(
    check: Callable[[list[str]], list[bool]],
    keys: list[str],
    expected: list[bool] | bool,
    batch: int,
    before: Callable[[], object] = lambda: None,
) -> int:
    """Checks per second of ``check`` over ``keys`` in batches of ``batch``:
    the best of three by process time, the answers verified afterwards."""
    best = float("inf")
    for _ in range(3):
        copy = [k[:-1] + k[-1] for k in keys]  # fresh strings each time
        batches = [copy[i : i + batch] for i in range(0, len(copy), batch)]
        before()
        started = time.process_time()
        answers = [check(b) for b in batches]
        best = min(best, time.process_time() - started)
        flat = [a for page in answers for a in page]
        wanted = expected if isinstance(expected, list) else [expected] * len(keys)
        assert flat == wanted, "wrong answers"
    return round(len(keys) / best)


def filter_part(n: int, checks: int, batch: int) -> dict[str, object]:
    rng = random.Random(0)
    before = rss_kib()
    f = KeyFilter()
    add = f.add
    started = time.perf_counter()
    for i in range(n):
        add(url(i))
    added_per_s = n / (time.perf_counter() - started)
    grown = rss_kib() - before
    absent = fresh([n + i for i in range(checks)])
    present = fresh([rng.randrange(n) for _ in range(checks)])
    maybe = f.maybe_many(absent)
    return {
        "urls": n,
        "added_per_s": round(added_per_s),
        "filter_bytes_per_url": round(f.nbytes / n, 2),
        "rss_growth_bytes_per_url": round(grown * 1024 / n, 2),
        "absent_reported_maybe": f"{sum(maybe) / len(maybe):.3%}",
        "checks_per_s": {
            "absent": per_second(f.maybe_many, absent, maybe, batch),
            "present": per_second(f.maybe_many, present, True, batch),
        },
    }


def build_store(path: Path, n: int) -> dict[str, object]:
    """The state file of ``n`` queued URLs. The first 10,000 go through
    SQLiteState.add; the rest are written as the rows ``add`` writes (the
    same columns and values: the next id, the fingerprint, the key without
    its origin, status queued, origin, depth), in id order so that each
    insert appends to the table, and the fingerprint index is built once
    at the end (sorted: its pages full, where a crawl's random inserts
    leave them ~3/4 full) — through ``add``, each insert dirties an index
    page at a random place and 10M take hours on this machine."""
    through_add = min(n, 10_000)
    state = SQLiteState(path)
    for start in range(0, through_add, 1000):
        urls = [url(i) for i in range(start, min(through_add, start + 1000))]
        state.add(
            [StoredRequest(key=u, url=u, depth=i % 6) for i, u in enumerate(urls)]
        )
    state.commit()
    (origin,) = state._db.execute("SELECT id FROM origin").fetchone()
    (name,) = state._db.execute("SELECT name FROM origin").fetchone()
    started = time.perf_counter()
    insert = (
        "INSERT INTO url (id, fp, key, url, status, origin, depth, round,"
        " priority, kind, referer, extra)"
        " VALUES (?, ?, ?, NULL, 1, ?, ?, 0, 0, 0, NULL, NULL)"
    )
    db = state._db
    db.execute("DROP INDEX url_fp")
    cut = len(name)
    for start in range(through_add, n, 100_000):
        chunk = range(start, min(n, start + 100_000))
        keys = [url(i) for i in chunk]
        db.executemany(
            insert,
            [
                (i + 1, fp, key[cut:], origin, i % 6)
                for i, fp, key in zip(chunk, fingerprints(keys), keys, strict=True)
            ],
        )
        db.commit()
    db.execute("CREATE INDEX url_fp ON url (fp)")
    db.commit()
    written = time.perf_counter() - started
    state.close()
    disk = sum(p.stat().st_size for p in path.parent.iterdir())
    return {
        "rows_written_per_s": round((n - through_add) / written)
        if n > through_add
        else None,
        "disk_bytes_per_url": round(disk / n),
    }


def check_store(path: Path, n: int, checks: int, batch: int) -> dict[str, object]:
    """In a fresh process: open the state, check, measure."""
    rng = random.Random(1)
    absent = fresh([n + i for i in range(checks)])
    nav = [rng.randrange(n) for _ in range(1000)]
    repeated = fresh([nav[i % 1000] for i in range(checks)])
    cold = fresh(rng.sample(range(n), min(n, checks) // 4))
    # pages: one new link, then seen ones, a third navigation, two thirds cold
    page_keys: list[str] = []
    page_seen: list[bool] = []
    news = iter(range(n + checks, n + 2 * checks))
    while len(page_keys) < checks:
        page_keys.append(url(next(news)))
        page_seen.append(False)
        for j in range(1, batch):
            page_keys.append(url(nav[j] if j % 3 == 0 else rng.randrange(n)))
            page_seen.append(True)
    before = rss_kib()
    anon_before = rss_kib("RssAnon")
    started = time.perf_counter()
    state = SQLiteState(path)
    opened_s = time.perf_counter() - started
    after_open = rss_kib()

    def clear() -> None:
        state._confirmed.clear()  # a cold start, on purpose

    def many(keys: list[str]) -> list[bool]:
        return seen_many(state, keys)

    rates = {
        "absent": per_second(many, absent, False, batch),
        "present_repeated": per_second(many, repeated, True, batch),
        "present_cold": per_second(many, cold, True, batch, before=clear),
        "page": per_second(many, page_keys, page_seen, batch, before=clear),
    }
    grown = rss_kib() - before
    anon_grown = rss_kib("RssAnon") - anon_before
    result = {
        "open_s": round(opened_s, 1),
        "filter_bytes_per_url": round(state.memory_bytes / n, 2),
        "rss_growth_on_open_bytes_per_url": round((after_open - before) * 1024 / n, 2),
        "rss_growth_bytes_per_url": round(grown * 1024 / n, 2),
        # the process's own memory: RSS less the file's pages it has mapped
        # (the state file is read through a memory map: RssFile)
        "anon_rss_growth_bytes_per_url": round(anon_grown * 1024 / n, 2),
        "checks_per_s": rates,
    }
    state.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--checks", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=35, help="links a page")
    parser.add_argument("--filter-only", action="store_true")
    parser.add_argument("--check-store", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check_store:
        result = check_store(args.check_store, args.urls, args.checks, args.batch)
        print(json.dumps(result))
        return
    report: dict[str, object] = {"batch": args.batch}
    report["filter"] = filter_part(args.urls, args.checks, args.batch)
    if not args.filter_only:
        with tempfile.TemporaryDirectory(prefix="seen-scale-") as tmp:
            path = Path(tmp) / "state.sqlite3"
            store = build_store(path, args.urls)
            command = [sys.executable, __file__, "--check-store", str(path)]
            command += ["--urls", str(args.urls), "--checks", str(args.checks)]
            command += ["--batch", str(args.batch)]
            child = subprocess.run(
                command,
                check=True,
                capture_output=True,
                text=True,
            )
            store.update(json.loads(child.stdout))
            report["store"] = {"urls": args.urls, **store}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
