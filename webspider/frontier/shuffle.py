"""Queue each page's outgoing links in random order (``-a shuffle=1``).

The original webspider's cheap remedy against several crawlers "leap-frogging"
each other through the same site in lock step: with the same start URL and
the same link order they would request the same pages at the same moments.
Requests of one page are held until the page's output ends and then released
in random order; items pass straight through. It runs before the depth
middleware, so the deferred frontier gets them shuffled too.

Settings: WEBSPIDER_SHUFFLE_ENABLED (off by default).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from webspider.frontier.options import DepthOptions

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self


class ShuffleMiddleware:
    # Not a BaseSpiderMiddleware: it reorders output rather than filtering it.
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        if not DepthOptions.of(crawler.settings).shuffle:
            raise NotConfigured
        self.random = random.Random()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def shuffled(self, requests: list[Request]) -> list[Request]:
        """The order to queue one page's requests in."""
        self.random.shuffle(requests)
        return requests

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any]
    ) -> Iterable[Any]:
        held: list[Request] = []
        for o in result:
            if isinstance(o, Request):
                held.append(o)
            else:
                yield o
        yield from self.shuffled(held)

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        held: list[Request] = []
        async for o in result:
            if isinstance(o, Request):
                held.append(o)
            else:
                yield o
        for request in self.shuffled(held):
            yield request
