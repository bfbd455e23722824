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
"""

from __future__ import annotations

from scrapy.statscollectors import MemoryStatsCollector


class StatsCollector(MemoryStatsCollector):
    __getattribute__ = object.__getattribute__
