"""Per-link cost of the seen-set and of building page requests.

    cd /work/wt/seenset && PYTHONPATH=$PWD python bench/seen_overhead.py

Two timings, each the best of several repeats of process time (so the
figure is the code's, not the machine's other load):

- membership: 1,000,000 ``key in seen`` checks (half hits, half misses)
  against 100,000 canonical URLs, as the spider's per-link loop does them:
  in a plain set (the spider's seen-set before the SeenSet interface), in
  MemorySeenSet's view (what the spider asks now), in MemorySeenSet itself
  and in a bare set subclass (the two designs not taken), interleaved in
  the same process;
- follow_links: the spider's follow_links on an already parsed page of
  1,000 links, with none, half and all of them already seen;
- building 1,000 link requests: inline ``Request(...)`` as the spider did
  before webspider.requests, ``link_requests`` as it does now, and
  ``page_request`` (where webspider.requests exists).

Runs against any checkout (compare two by running it with each on
PYTHONPATH): where webspider.frontier.seen does not exist yet the seen-set
is a plain set, as it was then.
"""

from __future__ import annotations

import logging
import tempfile
import time
import timeit
from typing import Any

from scrapy.utils.reactor import install_reactor

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")

from scrapy import Request  # noqa: E402
from scrapy.http import HtmlResponse  # noqa: E402
from scrapy.settings import Settings  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from webspider.keys import META_LINK_KIND, META_REFERER  # noqa: E402
from webspider.page.response import parsed_page  # noqa: E402
from webspider.spiders.webspider import WebSpider  # noqa: E402
from webspider.utils.url import canonical_url  # noqa: E402

try:
    from webspider.frontier.seen import MemorySeenSet as SeenSetClass
except ImportError:  # a checkout from before the SeenSet interface
    SeenSetClass = set  # type: ignore[misc,assignment]

LINKS = 1000
REPEAT = 15


class SetSubclass(set[str]):
    __slots__ = ()


def seen_set(keys: list[str]) -> Any:
    """What the spider is given: a plain set before the interface, the
    seen-set's view after."""
    seen = SeenSetClass()
    for key in keys:
        seen.add(key)
    return seen.view() if hasattr(seen, "view") else seen


def candidates(keys: list[str]) -> dict[str, Any]:
    found = {"plain set": set(keys), "SetSubclass": SetSubclass(keys)}
    if SeenSetClass is not set:
        found["MemorySeenSet.view()"] = seen_set(keys)
        found["MemorySeenSet"] = SeenSetClass(keys)
    return found


def membership(seen: Any, keys: list[str]) -> float:
    probes = [
        keys[i] if i % 2 else f"https://site.test/other/{i}.html" for i in range(1000)
    ]

    def run() -> None:
        for _ in range(1000):
            for key in probes:
                key in seen  # noqa: B015

    return min(timeit.repeat(run, number=1, repeat=REPEAT, timer=time.process_time))


def follow_links(seen_fraction: float) -> float:
    settings = Settings()
    settings.setmodule("webspider.settings", priority="project")
    out = tempfile.mkdtemp(prefix="webspider-seen-overhead-")
    settings.setdict(
        {
            "WEBSPIDER_OUTPUT": out,
            "WEBSPIDER_START_URLS": "http://site.test/",
            "FEEDS": {f"{out}/pages.jsonl": {"format": "jsonlines"}},
        },
        priority="cmdline",
    )
    crawler = get_crawler(WebSpider, settings.copy_to_dict())
    crawler.stats.open_spider()
    spider = WebSpider.from_crawler(crawler)
    crawler.spider = spider
    links = "".join(f'<a href="/p{i}.html">link {i}</a>' for i in range(LINKS))
    body = f"<html><head><title>T</title></head><body>{links}</body></html>"
    url = "http://site.test/index.html"
    response = HtmlResponse(
        url,
        body=body.encode(),
        encoding="utf-8",
        request=Request(url, meta={"depth": 1}),
    )
    page = parsed_page(response, spider)
    assert page is not None and len(page.links) == LINKS
    already = [canonical_url(link.url) for link in page.links]
    spider.seen_urls = seen_set(already[: int(LINKS * seen_fraction)])
    expected = LINKS - int(LINKS * seen_fraction)

    def run() -> None:
        assert sum(1 for _ in spider.follow_links(response, page)) == expected

    timings = timeit.repeat(run, number=20, repeat=REPEAT, timer=time.process_time)
    return min(timings) / 20


def request_building() -> dict[str, float]:
    # not in checkouts from before the factory (main() asks only where it is)
    from webspider.requests import link_requests, page_request  # noqa: PLC0415

    spider = WebSpider()
    urls = [f"http://site.test/p{i}.html" for i in range(LINKS)]
    referer = "http://site.test/"

    def inline() -> None:
        callback, errback = spider.parse, spider.on_error
        for url in urls:
            Request(
                url,
                callback=callback,
                errback=errback,
                meta={"depth": 2, META_REFERER: referer, META_LINK_KIND: "page"},
            )

    def bound() -> None:
        make = link_requests(spider, depth=2, referer=referer)
        for url in urls:
            make(url, "page")

    def general() -> None:
        for url in urls:
            page_request(spider, url, depth=2, referer=referer, kind="page")

    runs = {"inline Request": inline, "link_requests": bound, "page_request": general}
    best = dict.fromkeys(runs, float("inf"))
    order = list(runs.items())
    for _ in range(REPEAT):
        order = order[1:] + order[:1]  # none always runs first
        for name, run in order:
            seconds = timeit.timeit(run, number=5, timer=time.process_time) / 5
            best[name] = min(best[name], seconds)
    return best


def main() -> None:
    logging.disable(logging.INFO)
    print(f"seen-set class: {SeenSetClass.__module__}.{SeenSetClass.__qualname__}")
    keys = [f"https://site.test/section{i % 97}/page{i}.html" for i in range(100_000)]
    sets = candidates(keys)
    best = dict.fromkeys(sets, float("inf"))
    for _ in range(3):
        for name, seen in sets.items():
            best[name] = min(best[name], membership(seen, keys))
    for name, seconds in best.items():
        print(f"1M membership checks, {name}: {seconds * 1000:.1f} ms")
    for fraction in (0.0, 0.5, 1.0):
        per_page = follow_links(fraction)
        print(
            f"follow_links, {LINKS} links, {fraction:.0%} seen: "
            f"{per_page * 1000:.3f} ms/page, {per_page / LINKS * 1e9:.0f} ns/link"
        )
    if SeenSetClass is not set:
        for name, seconds in request_building().items():
            print(f"{LINKS} link requests, {name}: {seconds / LINKS * 1e9:.0f} ns each")


if __name__ == "__main__":
    main()
