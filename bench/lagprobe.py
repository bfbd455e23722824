"""A bench-only extension: how late the reactor runs a 10 ms timer.

``PYTHONPATH=$PWD:$PWD/bench scrapy crawl webspider ...
-s 'EXTENSIONS={"lagprobe.LagProbe": 0}'``
logs the reactor's worst and 99th percentile lateness at the end of the
crawl: the time something (parsing, converting, writing) held the reactor."""

from __future__ import annotations

import logging
import time
from typing import Any

from scrapy import signals
from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)
INTERVAL = 0.01


class LagProbe:
    def __init__(self, crawler: Any) -> None:
        self.lags: list[float] = []
        self.last = 0.0
        self.loop = LoopingCall(self.tick)
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> LagProbe:
        return cls(crawler)

    def tick(self) -> None:
        now = time.monotonic()
        if self.last:
            self.lags.append(now - self.last - INTERVAL)
        self.last = now

    def opened(self) -> None:
        self.loop.start(INTERVAL)

    def closed(self) -> None:
        self.loop.stop()
        lags = sorted(self.lags)
        if lags:
            logger.warning(
                "reactor lag: max %.1f ms, p99 %.1f ms, p90 %.1f ms over %d ticks",
                lags[-1] * 1e3,
                lags[int(len(lags) * 0.99)] * 1e3,
                lags[int(len(lags) * 0.9)] * 1e3,
                len(lags),
            )
