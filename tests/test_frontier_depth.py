from __future__ import annotations

from types import SimpleNamespace

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from webspider.config import ConfigError
from webspider.frontier.depth import DepthMiddleware
from webspider.frontier.options import get_depth_options
from webspider.frontier.scheduler import StateScheduler
from webspider.frontier.schedulerlookup import check_scheduler

SETTINGS = {
    "SCHEDULER": "webspider.frontier.scheduler.StateScheduler",
}


@pytest.fixture
def make(tmp_path):
    schedulers = []

    def make(**settings):
        crawler = get_crawler(
            Spider, {**SETTINGS, "WEBSPIDER_OUTPUT": str(tmp_path), **settings}
        )
        spider = Spider("t")
        crawler.spider = spider
        scheduler = StateScheduler.from_crawler(crawler)
        scheduler.open(spider)
        schedulers.append(scheduler)
        no_middlewares = SimpleNamespace(middleware=SimpleNamespace(middlewares=[]))
        crawler.engine = SimpleNamespace(scheduler=scheduler, downloader=no_middlewares)
        return DepthMiddleware(crawler), scheduler, crawler.stats

    yield make
    for scheduler in schedulers:
        scheduler.close("finished")


def response(depth: int, round_: int = 0, url: str = "http://x/p") -> HtmlResponse:
    request = Request(url, meta={"depth": depth, "webspider_round": round_})
    return HtmlResponse(url, body=b"<html></html>", request=request)


def link(path: str, kind: str = "page", **meta) -> Request:
    return Request(
        f"http://x{path}",
        meta={"webspider_link_kind": kind, "webspider_referer": "http://x/p", **meta},
    )


@pytest.mark.parametrize(
    ("settings", "parent_depth", "kind", "expected"),  # expected: (kept, depth)
    [
        ({}, 7, "page", (True, 8)),  # no cap
        ({"WEBSPIDER_DEPTH_MAX": 2}, 1, "page", (True, 2)),
        ({"WEBSPIDER_DEPTH_MAX": 2}, 2, "page", (False, 3)),  # deferred
        ({"WEBSPIDER_DEPTH_MAX": 2}, 2, "requisite", (True, 3)),  # part of its page
        ({"WEBSPIDER_DEPTH_MAX": "0"}, 0, "page", (False, 1)),
        (
            {"WEBSPIDER_DEPTH_MAX": 2, "WEBSPIDER_DEPTH_DEFER": "0"},
            2,
            "page",
            (False, 3),
        ),
    ],
)
def test_depth_and_cap(make, settings, parent_depth, kind, expected):
    kept, depth = expected
    mw, _, _ = make(**settings)
    request = link("/a", kind)
    out = mw.get_processed_request(request, response(parent_depth, round_=1))
    assert (out is request) == kept
    assert request.meta["depth"] == depth
    assert request.meta["webspider_round"] == 1


def test_deferred_once_into_the_frontier(make):
    mw, scheduler, stats = make(WEBSPIDER_DEPTH_MAX=1)
    for referer_depth in (1, 1, 2):
        assert mw.get_processed_request(link("/a"), response(referer_depth, 3)) is None
    assert [
        (e.url, e.depth, e.referer, e.round) for e in scheduler.state.iter_deferred()
    ] == [("http://x/a", 2, "http://x/p", 3)]
    assert stats.get_value("webspider/depth/deferred_count") == 1
    # not a skip: a later round fetches it (what is left deferred when the
    # crawl ends is skipped then: tests/test_e2e_depth_skips.py)
    assert stats.get_value("webspider/skipped/url_count/depth") is None
    assert stats.get_value("webspider/skipped/url_count") is None


def test_defer_0_drops(make):
    mw, scheduler, stats = make(WEBSPIDER_DEPTH_MAX=1, WEBSPIDER_DEPTH_DEFER=False)
    assert mw.get_processed_request(link("/a"), response(1)) is None
    assert not scheduler.deferring
    assert stats.get_value("webspider/depth/dropped_count") == 1
    assert stats.get_value("webspider/skipped/url_count/depth_limit") == 1


def test_depth_reset_and_start_requests(make):
    mw, _, _ = make(WEBSPIDER_DEPTH_MAX=1)
    request = link("/a", depth_reset=True)
    assert mw.get_processed_request(request, response(5)) is request
    assert request.meta["depth"] == 0
    assert "depth_reset" not in request.meta
    start = Request("http://x/")
    assert mw.get_processed_request(start, None) is start
    assert start.meta["depth"] == 0


def test_pages_per_round_and_deepest(make):
    mw, _, stats = make()
    for depth, round_ in [(0, 0), (3, 0), (1, 1)]:
        mw.get_processed_item({}, response(depth, round_))
    assert stats.get_value("webspider/depth/page_count/0") == 2
    assert stats.get_value("webspider/depth/page_count/1") == 1
    assert stats.get_value("webspider/depth/deepest") == 3


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"DEPTH_LIMIT": 3}, "DEPTH_LIMIT is not used by webspider"),
        ({"WEBSPIDER_DEPTH_MAX": "-1"}, "max_depth (WEBSPIDER_DEPTH_MAX) must be at"),
        ({"WEBSPIDER_DEPTH_MAX": "two"}, "must be a whole number, got 'two'"),
        ({"WEBSPIDER_DEPTH_MAX_ROUNDS": "x"}, "max_rounds"),
        ({"WEBSPIDER_DEPTH_DEFER": "maybe"}, "defer (WEBSPIDER_DEPTH_DEFER) must be"),
        (
            {"WEBSPIDER_DEPTH_MAX": 2, "SCHEDULER": "scrapy.core.scheduler.Scheduler"},
            "needs SCHEDULER",
        ),
    ],
)
def test_bad_options_are_one_clear_line(settings, error):
    with pytest.raises(ConfigError, match=None) as info:
        get_depth_options(Settings({**SETTINGS, **settings}))
        check_scheduler(Settings({**SETTINGS, **settings}))
    assert error in str(info.value)


def test_options_defaults_and_values():
    options = get_depth_options(Settings(SETTINGS))
    assert (options.max_depth, options.max_rounds, options.defer) == (None, None, True)
    options = get_depth_options(
        Settings(
            {
                "WEBSPIDER_DEPTH_MAX": "2",
                "WEBSPIDER_DEPTH_MAX_ROUNDS": "0",
                "WEBSPIDER_DEPTH_DEFER": "0",
                "SCHEDULER": "scrapy.core.scheduler.Scheduler",
            }
        )
    )
    assert (options.max_depth, options.max_rounds, options.defer) == (2, 0, False)
