"""webspider.stats: Scrapy's stats collector without its per-call wrapper."""

from __future__ import annotations

import asyncio

from scrapy import Spider
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from webspider.stats import STATS_EVENT_LOOP, StatsCollector


def test_the_crawl_counts_with_it():
    settings = Settings()
    settings.setmodule("webspider.settings")
    crawler = get_crawler(Spider, settings.copy_to_dict())
    assert type(crawler.stats) is StatsCollector


def test_it_counts_as_scrapys_does():
    crawler = get_crawler(Spider)
    ours, scrapys = StatsCollector(crawler), MemoryStatsCollector(crawler)
    for stats in (ours, scrapys):
        stats.open_spider()
        stats.inc_value("a")
        stats.inc_value("a", 2)
        stats.inc_value("b", start=10)
        stats.max_value("m", 3)
        stats.max_value("m", 1)
        stats.min_value("n", 3)
        stats.min_value("n", 1)
        stats.set_value("s", "x")
    # and, beside Scrapy's, the loop it ran on (pytest-twisted's)
    loop = type(asyncio.get_running_loop())
    assert ours.get_stats() == {
        **scrapys.get_stats(),
        STATS_EVENT_LOOP: f"{loop.__module__}.{loop.__qualname__}",
    }
    assert ours.get_value("a") == 3
    assert ours.get_value("missing", 7) == 7


def test_reading_an_attribute_goes_through_no_wrapper():
    # Scrapy's __getattribute__ hands out a wrapper of each method (for its
    # deprecation warning); ours hands out the method itself
    stats = StatsCollector(get_crawler(Spider))
    assert stats.inc_value.__func__ is MemoryStatsCollector.inc_value
