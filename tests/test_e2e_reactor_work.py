"""End-to-end: the asyncio tasks a crawl starts a page.

On small pages the crawl's process is the bottleneck, and what webspider
adds to Scrapy's engine per page is counted here on a real crawl: every
task started on the event loop, by its coroutine. Scrapy starts a few a
page whatever the spider does (the download, the scrape), and
CONCURRENT_ITEMS + 1 for the callback's output (webspider's 2: a page's
item and its links); a signal sent through the crawl's manager
(webspider.signals.SignalManager, as the ``crawl`` command installs it) to
plain receivers starts none: ``item_scraped``, once a page, started one
task a receiver and a gather before."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from scrapy import signals as scrapy_signals
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import install_test_resolver, make_settings
from tests.support.site import Node, Site
from tests.support.tasks import counted_tasks
from webspider.signals import SignalManager
from webspider.spiders.webspider import WebSpider

pytestmark = pytest.mark.e2e

PAGES = 60


def chain_site() -> Site:
    """60 pages, each linking to the next five and to the first."""
    site = Site()
    for i in range(PAGES):
        links = [f"/p/{j}" for j in range(i + 1, min(i + 6, PAGES))]
        site["/" if i == 0 else f"/p/{i}"] = Node([*links, "/"])
    return site


async def counted_crawl(tmp_path: Any, server: Any) -> tuple[Counter[str], int]:
    """Crawl the site with the crawl command's signal manager; the tasks
    started while it ran, by coroutine, and the pages scraped."""
    chain_site().serve(server)
    crawler = Crawler(WebSpider, make_settings(tmp_path / "out"))
    crawler.signals = SignalManager(crawler)
    install_test_resolver(crawler)
    pages: list[Any] = []

    def scraped(item: Any) -> None:
        pages.append(item)

    crawler.signals.connect(scraped, signal=scrapy_signals.item_scraped)
    with counted_tasks() as started:
        await crawler.crawl_async(start_urls=server.url("/"))
    return started, len(pages)


@deferred_f_from_coro_f
async def test_a_page_starts_no_task_for_its_signals(tmp_path, server):
    started, pages = await counted_crawl(tmp_path, server)
    assert pages == PAGES
    assert set(server.requested_pages()) >= {f"/p/{i}" for i in range(1, PAGES)}
    # The start and the end send a few signals to coroutine receivers
    # (Scrapy's own path, a task each); a page sends item_scraped to plain
    # ones: before, a task a receiver (the crawl's three and this test's),
    # 265 here
    handlers = started["_send_catch_log_asyncio.<locals>.handler"]
    assert handlers < 20, started.most_common()
    # The tasks for a callback's output: CONCURRENT_ITEMS (2; 8 before)
    # and one that fills their queue
    assert started["_parallel_asyncio.<locals>.worker"] <= 2 * PAGES + 10
    # All the tasks a page: Scrapy's download and scrape, and those (the
    # rest is the start and the end): 16.6 a page before both cuts
    assert sum(started.values()) <= 7 * PAGES, started.most_common()
