"""Benchmark (not a test): the crawl state's seen-set for a crawl's pages,
without the crawl (no network, no Scrapy, one process).

    PYTHONPATH=P python bench/seen_replay.py [SITE] [--repeat N]

SITE: a folder of HTML pages, as bench/records_replay.py reads it (default:
the 4,000-page synthetic site bench/smallpages.py generates). The state
leases a page at a time, as the scheduler does; the page's links (their
canonical URLs, in page order) are checked with ``contains_many`` as the
spider checks them, the unseen ones added as the scheduler's
``enqueue_request`` adds them, the page acknowledged, and the state
committed every 32 pages. Prints the process time of the checks and adds
alone (best of ``--repeat``): run it with P = two checkouts, alternated.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import records_replay

from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import StoredRequest
from webspider.utils.url import canonical_url


def crawl(start: str, keys_of: dict[str, list[str]], folder: Path) -> tuple[float, int]:
    state = SQLiteState(folder / "state.sqlite3")
    state.add([StoredRequest(key=start, url=start)])
    state.commit()
    spent, n = 0.0, 0
    while leases := state.lease(1, deadline=time.time() + 3600, strict=False):
        n += 1
        keys = list(keys_of.get(leases[0].request.url, ()))
        started = time.process_time()
        seen = state.contains_many(keys)
        new = {
            k: StoredRequest(key=k, url=k)
            for k, s in zip(keys, seen, strict=True)
            if not s
        }
        if new:
            state.add(list(new.values()))
        spent += time.process_time() - started
        state.ack([lease.ticket for lease in leases])
        if n % 32 == 0:
            state.commit()
    state.close()
    return spent, n


def main() -> int:
    order, links = records_replay.graph()
    keys_of = {
        url: [canonical_url(link) for link in found] for url, found in links.items()
    }
    best, n = float("inf"), 0
    for _ in range(records_replay.REPEAT):
        with tempfile.TemporaryDirectory() as folder:
            spent, n = crawl(order[0], keys_of, Path(folder))
        best = min(best, spent)
    print(
        f"seen checks and adds: {best:.3f} s CPU "
        f"({best / n * 1e6:.0f} us a request, {n} requests)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
