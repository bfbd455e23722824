"""The do-nothing Scrapy floor: the engine's cost per request, and no more.

    cd /some/dir/without/scrapy.cfg && \
    python -m scrapy runspider bench/floor_spider.py -a urls=URLS.txt

Requests every URL of a list (one a line: the same pages the other
contenders fetch, bench/smallpages.py writes it from the served tree) and
parses nothing: the callback returns nothing, so no item, no link, no
feed. robots.txt is off (the list is the site), CONCURRENT_ITEMS=1 (Scrapy
starts that many asyncio tasks per callback output, however empty),
concurrency as webspider's (16, 8 per host), INFO logging. Everything else
is Scrapy's default: its reactor (asyncio), HTTP/1.1 download handler,
stock middlewares, RFPDupeFilter, memory queues. ``-s
DOWNLOAD_HANDLERS=...`` (a JSON dict) tries another download handler,
``-s ASYNCIO_EVENT_LOOP=uvloop.Loop`` another event loop: the one that runs
is logged once, at the start (``Event loop: uvloop.Loop``), for
bench/smallpages.py to record.

What remains is what any Scrapy spider pays per request: the scheduler,
the middleware chains, the asyncio/Twisted bridging and the HTTP client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import scrapy


class FloorSpider(scrapy.Spider):
    name = "floor"
    custom_settings = {
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "CONCURRENT_ITEMS": 1,
        "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
    }

    def __init__(self, urls: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url_file = Path(urls)

    async def start(self) -> AsyncIterator[Any]:
        try:
            loop = type(asyncio.get_running_loop())
            self.logger.info("Event loop: %s.%s", loop.__module__, loop.__qualname__)
        except RuntimeError:  # -s TWISTED_REACTOR=another reactor
            self.logger.info("Event loop: none")
        with self.url_file.open() as fh:
            for line in fh:
                url = line.strip()
                if url:
                    yield scrapy.Request(url, callback=self.parse, errback=self.failed)

    def parse(self, response: Any) -> None:
        return None

    def failed(self, failure: Any) -> None:
        return None
