"""The crawl's stats collector: Scrapy's, at the cost of a dict.

Scrapy 2.19's StatsCollector routes every attribute read through a
``__getattribute__`` (for a deprecation warning about the ``spider``
argument): each ``inc_value`` builds a name, raises and catches an
AttributeError for ``_stats`` and calls through a wrapper, about 2 µs where
the dict update itself takes 0.1 µs. A crawl counts several stats per
request (Scrapy's downloader and core stats, webspider's own), so that was
about 3 % of the crawl process's CPU on small pages (bench/smallpages.py).
This class is Scrapy's MemoryStatsCollector with plain attribute reads: the
same methods and stats; a caller still passing ``spider`` is not warned.
Set by STATS_CLASS (webspider.settings).

It also records the asyncio event loop the crawl runs on
(STATS_EVENT_LOOP, e.g. ``uvloop.Loop``): what ASYNCIO_EVENT_LOOP asked for,
as the running loop says, in the stats Scrapy logs at the end.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from scrapy.statscollectors import MemoryStatsCollector

if TYPE_CHECKING:
    from scrapy import Spider

#: the running asyncio event loop's class (module.name), set when the spider
#: opens; absent when the crawl runs on no asyncio loop
STATS_EVENT_LOOP = "webspider/event_loop"


class StatsCollector(MemoryStatsCollector):
    __getattribute__ = object.__getattribute__

    def open_spider(self, spider: Spider | None = None) -> None:
        super().open_spider()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another reactor: no asyncio loop runs
            return
        kind = type(loop)
        self._stats[STATS_EVENT_LOOP] = f"{kind.__module__}.{kind.__qualname__}"
