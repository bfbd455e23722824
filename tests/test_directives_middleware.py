"""PageDirectivesMiddleware in isolation: hand-made responses, no crawl."""

from __future__ import annotations

import pytest
from scrapy import Item, Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.settings import Settings
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from webspider.config import ConfigError
from webspider.directives.middleware import PageDirectivesMiddleware
from webspider.items import PageItem
from webspider.page.response import directives_of
from webspider.spiders.webspider import WebSpider

URL = "http://site.test/page"


def settings(**overrides):
    s = Settings()
    s.setmodule("webspider.settings", priority="project")
    s.setdict(overrides, priority="cmdline")
    return s.copy_to_dict()


def middleware(**overrides) -> PageDirectivesMiddleware:
    crawler = get_crawler(Spider, settings(**overrides))
    return build_from_crawler(PageDirectivesMiddleware, crawler)


def page(body: str = "", status: int = 200, headers=None) -> HtmlResponse:
    return HtmlResponse(
        URL,
        status=status,
        body=f"<html><head>{body}</head><body></body></html>".encode(),
        encoding="utf-8",
        headers=headers or {},
        request=Request(URL, meta={"depth": 3}),
    )


def decided(mw: PageDirectivesMiddleware, response: Response):
    mw.process_spider_input(response)
    directives = directives_of(response)
    assert directives is not None
    return directives


def test_meta_and_header_combine():
    mw = middleware()
    response = page(
        '<meta name="robots" content="noindex">',
        headers={"X-Robots-Tag": ["googlebot: none", "webspider: nofollow"]},
    )
    d = decided(mw, response)
    assert (d.noindex, d.nofollow) == (True, True)
    stats = mw.crawler.stats.get_stats()
    assert stats["webspider/directives/noindex_count/meta"] == 1
    assert stats["webspider/directives/nofollow_count/header"] == 1
    assert stats["webspider/directives/noindex_count"] == 1
    assert "webspider/directives/noindex_count/user" not in stats


def test_header_applies_to_non_html():
    mw = middleware()
    response = Response(
        "http://site.test/doc.pdf",
        headers={"X-Robots-Tag": "noindex", "Content-Type": "application/pdf"},
        request=Request("http://site.test/doc.pdf"),
    )
    assert decided(mw, response).noindex


def test_product_token_comes_from_the_user_agent():
    mw = middleware(USER_AGENT="MyBot/2.0 (+https://example.org)")
    assert decided(mw, page('<meta name="mybot" content="nofollow">')).nofollow
    assert not decided(mw, page('<meta name="webspider" content="nofollow">')).nofollow


def test_error_pages_are_noindex_nofollow_even_without_robots():
    mw = middleware(ROBOTSTXT_OBEY=False)
    d = decided(mw, page("", status=404))
    assert (d.noindex, d.nofollow) == (True, True)
    assert not decided(mw, page('<meta name="robots" content="none">')).nofollow


def test_rel_nofollow_links_are_kept_canonical():
    mw = middleware()
    response = page('</head><body><a href="/a?b=2&a=1" rel="nofollow">x</a>')
    d = decided(mw, response)
    assert not d.nofollow
    assert not d.follows("http://site.test/a?a=1&b=2")
    assert d.follows("http://site.test/other")
    assert not decided(
        middleware(WEBSPIDER_DIRECTIVES_REL=False), page()
    ).nofollow_links


def test_requests_are_filtered_and_recorded():
    mw = middleware()
    response = page('<meta name="robots" content="nofollow">')
    mw.process_spider_input(response)
    request = Request("http://site.test/x")
    assert mw.get_processed_request(request, response) is None
    assert mw.get_processed_request(request, None) is request  # start request
    stats = mw.crawler.stats.get_stats()
    assert stats["webspider/skipped/url_count/nofollow"] == 1


def test_noindex_items_dropped_or_flagged():
    response = page('<meta name="robots" content="noindex">')
    mw = middleware()
    mw.process_spider_input(response)
    assert mw.get_processed_item(PageItem(url=URL), response) is None

    mw = middleware(WEBSPIDER_EXPORT_NOINDEX="1")
    mw.process_spider_input(response)
    item = mw.get_processed_item(PageItem(url=URL), response)
    assert item.noindex is True
    assert mw.get_processed_item({"url": URL}, response) == {
        "url": URL,
        "noindex": True,
    }
    other = Item()  # an item type without the field is passed on untouched
    assert mw.get_processed_item(other, response) is other


def test_disabled_and_bad_values():
    with pytest.raises(NotConfigured):
        middleware(WEBSPIDER_DIRECTIVES_ENABLED="0")
    with pytest.raises(ConfigError, match="WEBSPIDER_DIRECTIVES_META"):
        middleware(WEBSPIDER_DIRECTIVES_META="maybe")


def test_spider_builds_no_request_for_a_nofollow_page():
    crawler = get_crawler(WebSpider, settings())
    spider = WebSpider()
    spider._set_crawler(crawler)
    crawler.spider = spider
    mw = build_from_crawler(PageDirectivesMiddleware, crawler)
    body = (
        '<meta name="robots" content="nofollow"></head><body>'
        '<a href="/a">a</a><a href="/b">b</a>'
    )
    response = page(body)
    mw.process_spider_input(response)
    output = list(spider.parse(response))
    assert [type(o) for o in output] == [PageItem]
    stats = crawler.stats.get_stats()
    assert stats["webspider/skipped/url_count/nofollow"] == 2
