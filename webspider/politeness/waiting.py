"""Requests that wait inside a downloader middleware without blocking others.

The engine stops taking requests from the scheduler when CONCURRENT_REQUESTS
of them are in the downloader, and a request waiting in ``process_request``
counts as in the downloader. So 16 requests waiting for one origin's
robots.txt (or for its Retry-After pause or Crawl-delay turn) would stop the
whole crawl, though the other origins have nothing to wait for. While a
request waits in a ``WaitingRoom`` the downloader's limit is raised by one,
so it holds no place (up to ``WEBSPIDER_MAX_WAITING_REQUESTS`` per room, so
a long wait cannot drain the whole scheduler into memory). The request stays
in the downloader's ``active`` set, so the engine still sees the crawl as
busy (it neither closes the spider nor starts the next round meanwhile).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future

from webspider.internals import add_total_concurrency, total_concurrency, wake_engine
from webspider.politeness.options import PolitenessOptions

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult
    from twisted.internet.defer import Deferred


class WaitingRoom:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.limit = PolitenessOptions.of(crawler.settings).max_waiting_requests
        #: requests waiting now (counted or not)
        self.waiting = 0
        #: of which hold no place in CONCURRENT_REQUESTS
        self.uncounted = 0

    async def wait(self, request: Request, until: Deferred[Any]) -> None:
        """Wait for ``until`` to fire, without holding a place in the
        downloader's CONCURRENT_REQUESTS while room is left."""
        engine = self.crawler.engine
        downloader = engine.downloader if engine is not None else None
        uncounted = (
            downloader is not None
            and total_concurrency(downloader) > 0  # 0: no limit to make room in
            and self.uncounted < self.limit
        )
        self.waiting += 1
        if uncounted:
            assert downloader is not None
            add_total_concurrency(downloader, 1)
            self.uncounted += 1
            # The engine looks for more requests when one finishes, or every
            # 5 s; a place made here is neither, so tell it.
            wake_engine(engine)
        try:
            await maybe_deferred_to_future(until)
        finally:
            self.waiting -= 1
            if uncounted:
                assert downloader is not None
                add_total_concurrency(downloader, -1)
                self.uncounted -= 1


@dataclass
class StartGate:
    """The requests of one downloader slot waiting for their start, in order:
    (Deferred fired when it may go, the delay to keep after it)."""

    queue: deque[tuple[Deferred[None], float]] = field(default_factory=deque)
    #: monotonic time before which the next request may not start
    next_start: float = 0.0
    timer: CallLaterResult | None = None


class CrawlClosing(Exception):
    """The crawl closes while a request waits for its turn."""
