"""webspider.skips: what recording a skip counts and signals."""

from __future__ import annotations

from scrapy import Spider
from scrapy.utils.test import get_crawler

from webspider import signals, skips


def crawler_with_listener():
    crawler = get_crawler(Spider)
    crawler.stats.open_spider()
    heard: list[tuple[str, str, str | None]] = []

    def url_skipped(url: str, reason: str, referer: str | None = None) -> None:
        heard.append((url, reason, referer))

    crawler.signals.connect(url_skipped, signal=signals.url_skipped, weak=False)
    return crawler, heard


def test_record_skip_counts_and_signals():
    crawler, heard = crawler_with_listener()
    skips.record_skip(crawler, "http://a.test/", skips.SCOPE, "http://s.test/")
    assert heard == [("http://a.test/", skips.SCOPE, "http://s.test/")]
    assert crawler.stats.get_value(skips.STATS_PREFIX) == 1
    assert crawler.stats.get_value(f"{skips.STATS_PREFIX}/{skips.SCOPE}") == 1


def test_record_skips_is_record_skip_for_each_in_order():
    crawler, heard = crawler_with_listener()
    found = [
        ("http://a.test/", skips.SCOPE),
        ("http://s.test/x", skips.NOFOLLOW_LINK),
        ("http://b.test/", skips.SCOPE),
    ]
    skips.record_skips(crawler, found, "http://s.test/")
    assert heard == [(url, reason, "http://s.test/") for url, reason in found]
    stats = crawler.stats
    assert stats.get_value(skips.STATS_PREFIX) == 3
    assert stats.get_value(f"{skips.STATS_PREFIX}/{skips.SCOPE}") == 2
    assert stats.get_value(f"{skips.STATS_PREFIX}/{skips.NOFOLLOW_LINK}") == 1


def test_record_skips_of_nothing_sets_no_stats():
    crawler, heard = crawler_with_listener()
    skips.record_skips(crawler, [], "http://s.test/")
    assert heard == []
    assert crawler.stats.get_value(skips.STATS_PREFIX) is None


def test_record_skips_sends_one_urls_skipped_for_all():
    crawler = get_crawler(Spider)
    crawler.stats.open_spider()
    batches = []

    def urls_skipped(skipped, referer=None):
        batches.append((list(skipped), referer))

    crawler.signals.connect(urls_skipped, signal=signals.urls_skipped, weak=False)
    found = [("http://a.test/", skips.SCOPE), ("http://b.test/", skips.SCOPE)]
    assert not skips.has_receivers(crawler, signals.url_skipped)
    skips.record_skips(crawler, found, "http://s.test/")
    skips.record_skip(crawler, "http://c.test/", skips.ROBOTS)
    assert batches == [
        (found, "http://s.test/"),
        ([("http://c.test/", skips.ROBOTS)], None),
    ]
    assert crawler.stats.get_value(skips.STATS_PREFIX) == 3
