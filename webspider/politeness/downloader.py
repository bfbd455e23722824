"""Scrapy's downloader, with per-slot concurrency that holds.

Scrapy 2.19 starts each queued request of a slot as an asyncio task and only
counts it as transferring once that task runs, which is after the loop that
starts them has looked at the free places: a burst of requests queued for
one host all start at once, whatever ``CONCURRENT_REQUESTS_PER_DOMAIN`` says
(seen as 8 parallel requests to a host limited to 1). This downloader counts
a request as transferring from the moment it leaves the slot's queue.

Relies on Scrapy internals (``Downloader._get_slot``, ``Slot.queue``,
``Slot.transferring``), listed and checked at start-up in webspider.internals.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy.core.downloader import Downloader as ScrapyDownloader

from webspider.downloadermw import DownloaderMiddlewares
from webspider.internals import set_slot_queue, slot_queue, slot_transferring

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler


class ReservingQueue(deque[Any]):
    """A slot's queue that reserves a transfer place for what it hands out."""

    def __init__(self, transferring: set[Request], items: deque[Any]) -> None:
        super().__init__(items)
        self.transferring = transferring

    def popleft(self) -> Any:
        entry = super().popleft()
        # (request, deferred): Scrapy's _download() adds the request again
        # (a no-op) and removes it when the transfer ends.
        self.transferring.add(entry[0])
        return entry


class Downloader(ScrapyDownloader):
    """DOWNLOADER for webspider (see module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # Scrapy builds its own manager here; webspider's awaits only what
        # a middleware returned that is awaitable (webspider.downloadermw):
        # the same class with two methods replaced, no state of its own
        self.middleware.__class__ = DownloaderMiddlewares

    def _get_slot(self, request: Request, spider: Any = None) -> tuple[str, Slot]:
        key, slot = super()._get_slot(request)
        queue = slot_queue(slot)
        if not isinstance(queue, ReservingQueue):
            set_slot_queue(slot, ReservingQueue(slot_transferring(slot), queue))
        return key, slot
