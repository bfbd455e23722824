"""An extension for tests: the engine's heartbeat made rare.

Scrapy's engine asks the scheduler for requests when one finishes, when one
is scheduled, and every 5 seconds (its slot heartbeat) in case the scheduler
has something again. A wake-up the crawl relies on but never sends is hidden
by that heartbeat: the crawl is only slower. With
``-s EXTENSIONS={"tests.support.heartbeat.RareHeartbeat": 0}`` the heartbeat
comes every hour, so a missing wake-up stalls the crawl instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

HEARTBEAT = 3600.0


class RareHeartbeat:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        # before the engine starts its heartbeat (after spider_opened)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def spider_opened(self) -> None:
        engine = self.crawler.engine
        assert engine is not None
        engine._SLOT_HEARTBEAT_INTERVAL = HEARTBEAT
