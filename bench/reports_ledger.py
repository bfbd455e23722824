"""Hot-path cost and memory of the broken-link ledger on link-heavy site shapes.

    cd <worktree> && PYTHONPATH=$PWD python bench/reports_ledger.py

Site shapes: (pages, links per page, navigation links every page has): the
Python docs' 555 pages with ~30,000 link instances, and two larger sites.
Pages are fed in order, each marked good when "fetched" before its links are
recorded (a breadth-first crawl resolves most targets before most links to
them arrive); 2% of the URLs are broken. Then the worst case: no outcome known.
"""

import random
import time
import tracemalloc

from webspider.reports.links import LinkLedger, Outcome
from webspider.utils.url import canonical_url


def site(pages, links_per_page, nav):
    random.seed(1)
    urls = [f"https://docs.example.org/3/library/mod{i}.html" for i in range(pages)]
    out = []
    for u in urls:
        targets = urls[:nav] + random.sample(urls, links_per_page - nav)
        out.append((u, [(t, f"link text {j}", "a") for j, t in enumerate(targets)]))
    return urls, out


for pages, lpp, nav in ((555, 55, 40), (5000, 100, 60), (20000, 60, 40)):
    urls, graph = site(pages, lpp, nav)
    # BFS-like order: a page's outcome (2xx) is known before most pages linking to it
    tracemalloc.start()
    ledger = LinkLedger()
    t0 = time.perf_counter()
    for u, links in graph:
        ledger.good(canonical_url(u))
        ledger.add_page(u, [(canonical_url(t), text, tag) for t, text, tag in links])
    for u in urls[::50]:  # 2% broken
        ledger.broken(canonical_url(u) + "x", Outcome(u + "x", 404))
    dt = time.perf_counter() - t0
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = pages * lpp
    print(
        f"{pages} pages, {n} link instances: {dt * 1e9 / n:.0f} ns/link "
        "(incl. canonical_url cache), "
        f"ledger+cache peak {peak / 1e6:.1f} MB, pending {ledger.pending_count()}"
    )
    # worst case: nothing resolved yet (every link pending)
    tracemalloc.start()
    ledger = LinkLedger()
    for u, links in graph:
        ledger.add_page(u, [(canonical_url(t), text, tag) for t, text, tag in links])
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"   worst case (no outcome known): {cur / 1e6:.1f} MB = "
        f"{cur / n:.0f} B/link instance"
    )

print(
    "--- time without tracemalloc, canonical_url cache warm "
    "(the spider computed it already)"
)
for pages, lpp, nav in ((555, 55, 40), (20000, 60, 40)):
    urls, graph = site(pages, lpp, nav)
    for _u, links in graph:
        for t, _, _ in links:
            canonical_url(t)
    ledger = LinkLedger()
    t0 = time.perf_counter()
    for u, links in graph:
        ledger.good(canonical_url(u))
        ledger.add_page(u, [(canonical_url(t), text, tag) for t, text, tag in links])
    dt = time.perf_counter() - t0
    n = pages * lpp
    print(f"{pages} pages: {dt * 1e9 / n:.0f} ns/link, {dt * 1e3 / pages:.3f} ms/page")
