"""The include/exclude, exclude_re and robots.txt middlewares in isolation."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.settings import Settings
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from webspider.config import ConfigError
from webspider.politeness.robotstxt import RobotsTxtMiddleware
from webspider.scope.options import get_dropped_seeds, get_exclude_patterns
from webspider.scope.patternmiddleware import ExcludePatternMiddleware
from webspider.scope.prefixmiddleware import PrefixMiddleware

BASE = {"WEBSPIDER_START_URLS": "https://x.org/docs/"}


def crawler_with(**settings: object):
    crawler = get_crawler(Spider, {**BASE, **settings})
    crawler.spider = Spider("test")
    return crawler


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://x.org/docs/a", None),
        ("https://X.ORG/DOCS/b", None),
        ("https://x.org/docs/old/a", "exclude"),
        ("https://x.org/blog/", "include"),
        ("https://x.org/docsearch", "include"),
    ],
)
def test_prefix_middleware(url, reason):
    crawler = crawler_with(
        WEBSPIDER_INCLUDE="https://x.org/docs/",
        WEBSPIDER_EXCLUDE="https://x.org/docs/old",
    )
    mw = build_from_crawler(PrefixMiddleware, crawler)
    request = Request(url, meta={"webspider_referer": "https://x.org/docs/"})
    assert mw.skip_reason(request) == reason
    if reason is None:
        assert mw.process_request(request) is None
    else:
        with pytest.raises(IgnoreRequest):
            mw.process_request(request)
        assert crawler.stats.get_value(f"webspider/skipped/url_count/{reason}") == 1


def test_prefix_middleware_lets_robots_txt_through():
    crawler = crawler_with(WEBSPIDER_INCLUDE="https://x.org/docs/")
    mw = build_from_crawler(PrefixMiddleware, crawler)
    request = Request("https://x.org/robots.txt", meta={"webspider_robotstxt": True})
    assert mw.process_request(request) is None


def test_middlewares_off_without_lists():
    crawler = crawler_with()
    with pytest.raises(NotConfigured):
        build_from_crawler(PrefixMiddleware, crawler)
    with pytest.raises(NotConfigured):
        build_from_crawler(ExcludePatternMiddleware, crawler)


def test_exclude_pattern_middleware():
    crawler = crawler_with(WEBSPIDER_EXCLUDE_RE=[r"[?&]sort=", "/print/"])
    mw = build_from_crawler(ExcludePatternMiddleware, crawler)
    assert mw.process_request(Request("https://x.org/docs/?page=2")) is None
    for url in ("https://x.org/docs/?a=1&sort=up", "https://x.org/print/docs"):
        with pytest.raises(IgnoreRequest):
            mw.process_request(Request(url))
    assert crawler.stats.get_value("webspider/skipped/url_count/exclude_re") == 2


def test_robots_off_warns_and_is_not_configured(caplog):
    crawler = crawler_with(ROBOTSTXT_OBEY=False)
    with caplog.at_level(logging.WARNING), pytest.raises(NotConfigured):
        build_from_crawler(RobotsTxtMiddleware, crawler)
    assert "robots.txt is NOT obeyed" in caplog.text


@pytest.mark.parametrize(
    ("settings", "dropped"),
    [
        ({}, []),
        ({"WEBSPIDER_INCLUDE": "https://x.org/"}, []),
        (
            {
                "WEBSPIDER_START_URLS": "https://x.org/docs/,https://x.org/blog/",
                "WEBSPIDER_INCLUDE": "https://x.org/docs/",
            },
            [("https://x.org/blog/", "include")],
        ),
        (
            {
                "WEBSPIDER_START_URLS": "https://x.org/a,https://x.org/b?sort=1",
                "WEBSPIDER_EXCLUDE": "https://x.org/a",
                "WEBSPIDER_EXCLUDE_RE": "sort=",
            },
            None,  # nothing left
        ),
    ],
)
def test_dropped_seeds(settings, dropped):
    values = Settings({**BASE, **settings})
    if dropped is None:
        with pytest.raises(ConfigError, match="no start URL is left"):
            get_dropped_seeds(values)
    else:
        assert get_dropped_seeds(values) == dropped


def test_exclude_re_is_not_split_on_commas():
    patterns = get_exclude_patterns(Settings({"WEBSPIDER_EXCLUDE_RE": "a{1,3}b"}))
    assert [p.pattern for p in patterns] == ["a{1,3}b"]
