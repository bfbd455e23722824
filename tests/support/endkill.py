"""An extension for tests: the crawl killed (SIGKILL) at the start of
``spider_closed``, the first of its receivers.

By then Scrapy has closed the scheduler: the crawl state's last commit is
made (a crawl that finished is marked so, and the next run of the same
command is a new crawl), and what the crawl's end writes must be on disk.
``-s EXTENSIONS=<EXTENSIONS_WITH_KILLER>``: webspider's extensions and this
one at order 0 (built, so connected, before them; ``-s EXTENSIONS`` replaces
the project's whole dict).
"""

from __future__ import annotations

import json
import os
import signal
from typing import TYPE_CHECKING

from scrapy import signals

from webspider import settings as webspider_settings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self


EXTENSIONS_WITH_KILLER = json.dumps(
    {"tests.support.endkill.KillAtSpiderClosed": 0, **webspider_settings.EXTENSIONS}
)


class KillAtSpiderClosed:
    def __init__(self, crawler: Crawler) -> None:
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def spider_closed(self) -> None:
        os.kill(os.getpid(), signal.SIGKILL)
