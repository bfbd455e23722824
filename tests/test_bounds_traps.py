"""The trap rules (webspider.bounds.traps) as tables, and the trap middleware
in isolation."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from tests.support.records import reopen
from tests.support.records import store as store  # noqa: PLC0414
from webspider import signals, skips
from webspider.bounds.trapmiddleware import TrapMiddleware
from webspider.bounds.traps import Counter, repeated_segments
from webspider.keys import META_ROBOTSTXT, STATS_STATE_RESUMED


@pytest.mark.parametrize(
    ("path", "repeated"),
    [
        ("/", False),
        ("/a/", False),
        ("/a/a/", False),  # twice in a row: allowed
        ("/a/a/a/", True),
        ("/a/a/a", True),
        ("/docs/a/a/b/a/", False),  # not in a row
        ("/x/y/x/y/", False),
        ("/x/y/x/y/x/y/", True),  # a run of two segments, three times
        ("/p/x/y/z/x/y/z/x/y/z/q", True),
        ("/2020/01/01/post", False),
        ("/library/os.html", False),
        ("/a//a//a/", True),  # empty segments do not separate
        ("/a/b/c/d/e/f/g/h/i/j/k/l", False),
    ],
)
def test_repeated_segments(path, repeated):
    assert repeated_segments(path, 2) is repeated


def test_repeated_segments_bound_and_off():
    assert repeated_segments("/a/a/a/", 3) is False
    assert repeated_segments("/a/a/a/a/", 3) is True
    assert repeated_segments("/a/a/a/a/a/a/", 0) is False  # 0: off


def test_counter(store):
    counter = Counter(2, store.records("test.counts"))
    assert not counter.full("/cal")
    counter.add("/cal")
    counter.add("/cal")
    assert counter.full("/cal")
    assert not counter.full("/other")
    assert counter.records.count() == 1  # one short key per path


def test_query_counts_go_on_in_a_resumed_crawl_and_restart_in_a_new_one(request, store):
    def opened(store, resumed):
        mw = middleware(WEBSPIDER_TRAPS_MAX_QUERIES=2)
        mw.crawler.stats.set_value(STATS_STATE_RESUMED, int(resumed))
        mw.crawler.signals.send_catch_log(signals.crawl_state_opened, records=store)
        return mw

    mw = opened(store, resumed=False)
    assert mw.trap_reason(Request("https://x.org/cal?m=1")) is None
    assert mw.trap_reason(Request("https://x.org/cal?m=2")) is None
    assert mw.trap_reason(Request("https://x.org/cal?m=3")) == skips.QUERY_VARIANTS
    store = reopen(request, store)
    mw = opened(store, resumed=True)
    assert mw.trap_reason(Request("https://x.org/cal?m=4")) == skips.QUERY_VARIANTS
    mw = opened(store, resumed=False)
    assert mw.trap_reason(Request("https://x.org/cal?m=4")) is None


def middleware(**settings: object) -> TrapMiddleware:
    crawler = get_crawler(
        Spider, {"WEBSPIDER_START_URLS": "https://x.org/", **settings}
    )
    crawler.spider = Spider("test")
    crawler.stats.open_spider()
    return build_from_crawler(TrapMiddleware, crawler)


def refused(mw: TrapMiddleware, request: Request) -> str | None:
    """The skip reason of ``request`` (recorded in the stats), or None."""
    stats = mw.crawler.stats
    before = dict(stats.get_stats())
    try:
        mw.process_request(request)
    except IgnoreRequest:
        counted = [
            key.rpartition("/")[2]
            for key, value in stats.get_stats().items()
            if key.startswith("webspider/skipped/url_count/")
            and value != before.get(key)
        ]
        assert len(counted) == 1
        return counted[0]
    return None


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://x.org/a/b.html", None),
        ("https://x.org/" + "x" * 3000, "url_length"),
        ("https://x.org/a/a/a/", "repeated_path"),
    ],
)
def test_trap_middleware(url, reason):
    assert refused(middleware(), Request(url)) == reason


def test_query_strings_per_path_are_bounded():
    mw = middleware(WEBSPIDER_TRAPS_MAX_QUERIES=3)
    for month in range(3):
        assert refused(mw, Request(f"https://x.org/cal?month={month}")) is None
    assert refused(mw, Request("https://x.org/cal?month=3")) == "query_variants"
    # another path, and the path itself without a query, are not counted
    assert refused(mw, Request("https://x.org/other?month=3")) is None
    assert refused(mw, Request("https://x.org/cal")) is None
    # a retry of a request let through goes again
    retry = Request("https://x.org/cal?month=1", meta={"retry_times": 1})
    mw.process_request(retry)


def test_the_host_budget():
    mw = middleware(WEBSPIDER_TRAPS_MAX_HOST_REQUESTS=2)
    assert refused(mw, Request("https://x.org/1")) is None
    assert refused(mw, Request("https://x.org/2")) is None
    assert refused(mw, Request("https://x.org/3")) == "host_budget"
    assert refused(mw, Request("https://y.org/1")) is None
    # a robots.txt request is never refused, nor counted
    mw.process_request(Request("https://y.org/robots.txt", meta={META_ROBOTSTXT: 1}))
    assert refused(mw, Request("https://y.org/2")) is None


def test_every_rule_off_is_not_configured():
    with pytest.raises(NotConfigured):
        middleware(WEBSPIDER_TRAPS_ENABLED=False, URLLENGTH_LIMIT=0)
    mw = middleware(WEBSPIDER_TRAPS_ENABLED=False)
    assert refused(mw, Request("https://x.org/a/a/a/a/")) is None
    assert refused(mw, Request("https://x.org/" + "x" * 3000)) == "url_length"
