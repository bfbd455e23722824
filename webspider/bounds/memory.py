"""The sum of response bodies held in memory, bounded.

Scrapy bounds one body (``DOWNLOAD_MAXSIZE``, also when decompressing) and
stops taking requests from the scheduler while 5 MB of responses are in its
scraper (``SCRAPER_SLOT_MAX_ACTIVE_SIZE``), but nothing bounds what is under
way: 16 compressed bombs downloaded at once are 16 small bodies that become
16 bodies of 64 MiB as they are decompressed, one after the other, all held until
their pages are read, exported and mirrored (1.1 GB measured). Here a body
counts from its first byte until its request leaves the engine (its page
done: webspider.internals.requests_in_progress), and while the bodies held
sum to ``WEBSPIDER_BODY_MEMORY_MAX`` or more:

- a response that arrives waits before it is decompressed and read, holding
  only the bytes it came with, until the bodies let through before it sum to
  less (so they never exceed the bound by more than one body);
- a new download waits before it starts, holding its place in
  ``CONCURRENT_REQUESTS`` (the engine then takes no more from the
  scheduler). Downloads already under way go on.

Decompression is where a body grows, so the bound is kept there: this is
Scrapy's HttpCompressionMiddleware, in its place (590), with the wait before
it and the count after it. With nothing held, anything goes through (a single
body larger than the bound included). Requests released are looked for every
``POLL`` seconds while something waits: Scrapy sends no signal when a page is
done.

Settings: ``WEBSPIDER_BODY_MEMORY_MAX`` (0: no bound), and Scrapy's
``COMPRESSION_ENABLED``, ``DOWNLOAD_MAXSIZE``, ``DOWNLOAD_WARNSIZE``.
Stats: ``webspider/body_memory/waited_count`` (``/download``, ``/response``),
``webspider/body_memory/max_bytes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.asyncio import sleep

from webspider.bounds.options import BoundsOptions
from webspider.internals import requests_in_progress
from webspider.keys import STATS_BODY_MEMORY_MAX, STATS_BODY_MEMORY_WAITED

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

#: seconds between looks for released bodies while something waits
POLL = 0.05


class BodyMemoryMiddleware(HttpCompressionMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler=crawler)
        self.crawler = crawler
        self.decompress = crawler.settings.getbool("COMPRESSION_ENABLED")
        self.budget = BoundsOptions.of(crawler.settings).body_memory
        #: bytes of bodies downloading, or arrived and waiting to be let through
        self.receiving: dict[Request, int] = {}
        #: bytes of the (decompressed) bodies let through
        self.admitted: dict[Request, int] = {}
        #: the largest sum held so far (the stat is set when it grows)
        self.max_held = -1
        if self.budget:
            crawler.signals.connect(self.bytes_received, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        budget = BoundsOptions.of(crawler.settings).body_memory
        if not budget and not crawler.settings.getbool("COMPRESSION_ENABLED"):
            raise NotConfigured
        return cls(crawler)

    # -- what is held ---------------------------------------------------------------
    def bytes_received(self, data: bytes, request: Request) -> None:
        self.receiving[request] = self.receiving.get(request, 0) + len(data)

    def held(self) -> tuple[int, int]:
        """(bytes of the bodies let through, of all bodies) held now."""
        in_progress = requests_in_progress(self.crawler.engine)
        for table in (self.receiving, self.admitted):
            for request in [r for r in table if r not in in_progress]:
                del table[request]
        admitted = sum(self.admitted.values())
        total = admitted + sum(self.receiving.values())
        if total > self.max_held and self.crawler.stats is not None:
            self.max_held = total
            self.crawler.stats.max_value(STATS_BODY_MEMORY_MAX, total)
        return admitted, total

    def room_for_download(self) -> bool:
        _, total = self.held()
        return total < self.budget or not (self.admitted or self.receiving)

    def room_for_response(self) -> bool:
        admitted, _ = self.held()
        return admitted < self.budget or not self.admitted

    async def _wait(self, room: Callable[[], bool], what: str) -> None:
        if room():
            return
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(STATS_BODY_MEMORY_WAITED)
            stats.inc_value(f"{STATS_BODY_MEMORY_WAITED}/{what}")
        while not room():
            await sleep(POLL)

    # -- the middleware ---------------------------------------------------------------
    async def process_request(self, request: Request) -> None:  # type: ignore[override]
        if self.budget:
            await self._wait(self.room_for_download, "download")
        if self.decompress:
            super().process_request(request)  # Accept-Encoding

    async def process_response(  # type: ignore[override]
        self, request: Request, response: Response
    ) -> Request | Response:
        if self.budget:
            self.receiving[request] = len(response.body)
            await self._wait(self.room_for_response, "response")
        try:
            result = (
                super().process_response(request, response)
                if self.decompress
                else response
            )
        finally:
            self.receiving.pop(request, None)
        if self.budget and isinstance(result, Response):
            self.admitted[request] = len(result.body)
        return result
