"""An extension for tests: the crawl state committed while a page's item is
being scraped — its request still in progress, its lease not acknowledged —
and the crawl killed (SIGKILL) at once.

The page is fetched again by the next run (its acknowledgement was not
committed); what the first run kept of it must not be in that commit, or
the page counts twice. ``-s TEST_KILL_AT_ITEM=<path>`` names the page;
``-s EXTENSIONS=<EXTENSIONS_WITH_COMMIT_KILLER>``: webspider's extensions and
this one last (built, so connected to ``item_scraped``, after them: they
see the item before the commit).
"""

from __future__ import annotations

import json
import os
import signal
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals

from webspider import settings as webspider_settings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self


EXTENSIONS_WITH_COMMIT_KILLER = json.dumps(
    {
        **webspider_settings.EXTENSIONS,
        "tests.support.commitkill.CommitAndKillAtItem": 10_000,
    }
)


class CommitAndKillAtItem:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.path = crawler.settings.get("TEST_KILL_AT_ITEM")
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def item_scraped(self, item: Any, response: Response) -> None:
        if urlsplit(response.url).path != self.path:
            return
        engine = self.crawler.engine
        assert engine is not None
        # what a commit due now does (the scheduler's, private: a test's)
        engine.scheduler._commit()  # type: ignore[union-attr]
        os.kill(os.getpid(), signal.SIGKILL)
