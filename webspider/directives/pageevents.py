"""Tell a program what happens to each page: links queued, page complete.

The original design of this spider raised events a program could handle;
with webspider.signals.page_found (sent by the page-directives middleware
before the callback) these make the triple, in Scrapy's idiom:

- ``links_queued(url, depth, urls)``: the requests a page's callback
  produced, about to be handed to the scheduler (after every other spider
  middleware had its say, hence the low order number). A handler that
  removes a URL from ``urls`` drops that request (skip reason
  ``nofollow_link``). The requests are held until the callback is done,
  which costs one list per page.
- ``page_complete(url, status, error)``: after the last of them was handed
  on, or when the callback raised (``error`` then names the exception). For
  downloads that failed without a response the spider's errback sends it.

Neither is sent when no handler is connected to it (``signals.listened``,
asked per page); the requests are held until the callback is done either way.

Settings: WEBSPIDER_PAGE_EVENTS_ENABLED.
Stats: ``webspider/skipped/url_count/nofollow_link`` for URLs a handler removed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from webspider import signals, skips
from webspider.directives.options import DirectivesOptions
from webspider.keys import META_CHECK_ONLY

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self


class PageEventsMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        if not DirectivesOptions.of(crawler.settings).page_events:
            raise NotConfigured

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        if response.meta.get(META_CHECK_ONLY):
            # a link check of an outside URL, not a page of the crawl
            async for output in result:
                yield output
            return
        crawler = self.crawler
        send = crawler.signals.send_catch_log
        requests: list[Request] = []
        try:
            async for output in result:
                if isinstance(output, Request):
                    requests.append(output)
                else:
                    yield output
        except Exception as exc:
            if signals.listened(crawler, signals.page_complete):
                send(
                    signals.page_complete,
                    url=response.url,
                    status=response.status,
                    error=f"{type(exc).__name__}: {exc}",
                )
            raise
        if not signals.listened(crawler, signals.links_queued):
            # nobody can remove a URL: no list of them to build and compare
            for request in requests:
                yield request
        else:
            queued = [request.url for request in requests]
            urls = queued.copy()
            send(
                signals.links_queued,
                url=response.url,
                depth=response.meta.get("depth", 0),
                urls=urls,
            )
            if urls == queued:
                for request in requests:
                    yield request
            else:
                kept = set(urls)
                for request in requests:
                    if request.url in kept:
                        yield request
                    else:
                        skips.record_skip(
                            crawler, request.url, skips.NOFOLLOW_LINK, response.url
                        )
        if signals.listened(crawler, signals.page_complete):
            send(
                signals.page_complete,
                url=response.url,
                status=response.status,
                error=None,
            )
