"""Scrapy's BaseSpiderMiddleware without its per-item wrapper.

Scrapy 2.19 decorates ``BaseSpiderMiddleware.process_spider_output_async``
with a check that no ``spider`` argument is passed (a deprecation
warning): for an async generator the check is a second async generator
around the first, so every item and request a page yields crosses two
generators a middleware instead of one. webspider's filters on every
page's output (the Referer of its links, the page's directives, depth:
three middlewares, ~36 outputs a small page) paid ~16 µs a page for the
wrappers alone, 1-1.5 % of the crawl process on small pages
(bench/README.md, "The crawl process's per-page cost by feature").

``OutputFilter`` goes before BaseSpiderMiddleware (or a subclass of it)
among a middleware's bases: the same method, the same calls of
``_get_processed`` in the same order, undecorated. Scrapy passes no
``spider`` to it (it is not required), so nothing is lost but a warning
webspider's code never triggers.

``StartRequestsMiddleware`` stands in for Scrapy's StartSpiderMiddleware
(``is_start_request`` set in the start requests' meta): Scrapy's marks the
start requests in ``process_start`` and passes every page's output through
its inherited ``process_spider_output_async`` too, two generators an item
that change nothing (it marks only requests without a response). This one
has Scrapy's ``process_start`` alone.

Ground floor: imports Scrapy only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.spidermiddlewares.start import StartSpiderMiddleware

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self


class OutputFilter:
    """``process_spider_output_async`` of BaseSpiderMiddleware, unwrapped."""

    if TYPE_CHECKING:  # BaseSpiderMiddleware's, by the MRO

        def _get_processed(self, o: Any, response: Response | None) -> Any: ...

    async def process_spider_output_async(
        self,
        response: Response | None,
        result: AsyncIterator[Any],
        spider: Spider | None = None,  # Scrapy's signature; never passed
    ) -> AsyncIterator[Any]:
        get_processed = self._get_processed
        async for o in result:
            if (o := get_processed(o, response)) is not None:
                yield o


class StartRequestsMiddleware:
    """Scrapy's StartSpiderMiddleware on the start requests alone (see the
    module docstring); SPIDER_MIDDLEWARES puts it at Scrapy's place, 25."""

    def __init__(self, crawler: Crawler) -> None:
        self.start = StartSpiderMiddleware(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return self.start.process_start(start)
