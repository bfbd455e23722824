"""webspider.requests: which callbacks and meta keys each kind of page request gets.

First the factory by itself, then each place that builds page requests, so
that a site that stops using the factory (or changes what it passes) shows.
"""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse, XmlResponse
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.request import fingerprint
from scrapy.utils.test import get_crawler

from webspider.frontier.requestdata import from_stored
from webspider.frontier.state import StoredRequest
from webspider.politeness.sitemaps import SitemapSeeder
from webspider.reports.linkcheck import LinkCheckMiddleware
from webspider.requests import (
    link_requests,
    page_request,
    page_spider,
    safe_url_request,
)
from webspider.spiders.webspider import WebSpider

SITE = "http://site.test/"
REFERER = "webspider_referer"
KIND = "webspider_link_kind"
ROUND = "webspider_round"
CHECK_ONLY = "webspider_check_only"


def make_spider(tmp_path, **overrides) -> WebSpider:
    settings = Settings()
    settings.setmodule("webspider.settings", priority="project")
    settings.setdict(
        {
            "WEBSPIDER_OUTPUT": str(tmp_path),
            "WEBSPIDER_START_URLS": [SITE, "http://site.test/b"],
            "FEEDS": {str(tmp_path / "pages.jsonl"): {"format": "jsonlines"}},
            **overrides,
        },
        priority="cmdline",
    )
    crawler = get_crawler(WebSpider, settings.copy_to_dict())
    crawler.stats.open_spider()
    spider = WebSpider.from_crawler(crawler)
    crawler.spider = spider
    return spider


@pytest.fixture
def spider(tmp_path) -> WebSpider:
    return make_spider(tmp_path)


def assert_page_callbacks(request: Request, spider: WebSpider) -> None:
    assert request.callback == spider.parse
    assert request.errback == spider.on_error


# -- the factory ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("facts", "method", "meta"),
    [
        # a start URL
        ({"depth": 0}, "GET", {"depth": 0}),
        # a link found on a page
        (
            {"depth": 3, "referer": SITE, "kind": "requisite"},
            "GET",
            {"depth": 3, REFERER: SITE, KIND: "requisite"},
        ),
        # a seed of round 2 from the deferred frontier
        (
            {"depth": 0, "round": 2, "referer": SITE, "kind": "page"},
            "GET",
            {"depth": 0, ROUND: 2, REFERER: SITE, KIND: "page"},
        ),
        # a check of an outside link: no depth, so the level barrier ignores it
        (
            {"method": "HEAD", "referer": SITE, "check_only": True},
            "HEAD",
            {CHECK_ONLY: True, "allow_offsite": True, REFERER: SITE},
        ),
        # facts not given (None) are not set
        (
            {"depth": 0, "referer": None, "kind": None, "round": None},
            "GET",
            {"depth": 0},
        ),
    ],
)
def test_page_request(spider, facts, method, meta):
    request = page_request(spider, "http://site.test/x", **facts)
    assert request.url == "http://site.test/x"
    assert request.method == method
    assert request.meta == meta
    assert_page_callbacks(request, spider)
    assert not request.dont_filter


def test_link_requests_are_page_requests_with_the_page_bound(spider):
    make = link_requests(spider, depth=2, referer=SITE)
    for kind in ("page", "requisite"):
        request = make("http://site.test/x", kind)
        same = page_request(
            spider, "http://site.test/x", depth=2, referer=SITE, kind=kind
        )
        assert request.meta == same.meta == {"depth": 2, REFERER: SITE, KIND: kind}
        assert (request.method, request.callback, request.errback) == (
            same.method,
            same.callback,
            same.errback,
        )
        assert_page_callbacks(request, spider)
    # each request has a meta of its own (middlewares write into it), though
    # link_requests hands Request the same dict per kind for it to copy
    first = make("http://site.test/x", "page")
    first.meta["depth"] = 0
    first.meta["depth_reset"] = True
    assert make(SITE, "page").meta == {"depth": 2, REFERER: SITE, KIND: "page"}


# URLs a crawl stores and finds on pages, odd ones included: each Request
# built without Scrapy's quoting must be the one Request(url, …) builds
ODD_URLS = [
    "http://site.test/a/b.html",
    "https://127.0.0.1:8443/_static/x-y_z~(1).css?v=2&w=%41",
    "http://site.test:8080/p:q@r!$&'()*+,;=/%zz/../.%2e",
    "http://site.test/a#top",
    "http://site.test/a?q=1#x?y'z",
    "http://site.test/?a='b'",
    "http://site.test/#a#b",
    "http://site.test/a b?c d#e f",
    "http://site.test/a|b^c`d{e}",
    "http://site.test/ä?ö=ü#ß",
    "http://bücher.test/x",
    "http://xn--bcher-kva.test/x",
    "http://Site.TEST/A",
    "HTTP://site.test/",
    "http://site.test",
    "http://site.test/a?",
    "http://site.test/a#",
    "http://site.test:80/",
    "http://site.test:08/",
    "http://u:p@ss@site.test/",
    "http://[::1]:8080/a",
    "http://site.test/a\\b",
    "http://site.test/%E2%82%AC%",
]


def assert_same_request(fast: Request, slow: Request, spider: Spider | None) -> None:
    assert type(fast) is type(slow)
    assert fast.to_dict(spider=spider) == slow.to_dict(spider=spider)
    assert fingerprint(fast) == fingerprint(slow)
    assert "verbatim_url" not in fast.meta


@pytest.mark.parametrize("url", ODD_URLS)
def test_requests_of_safe_urls_are_built_as_scrapy_builds_them(spider, url):
    meta = {"depth": 2, REFERER: SITE, KIND: "page", "webspider_round": 1}
    arguments = {
        "callback": spider.parse,
        "errback": spider.on_error,
        "method": "HEAD",
        "priority": -3,
        "headers": {"Referer": SITE},
    }
    fast = safe_url_request(url, meta=meta, **arguments)
    assert_same_request(fast, Request(url, meta=meta, **arguments), spider)
    fast.meta["depth"] = 0  # a meta of its own
    assert meta["depth"] == 2
    # the link factory: each link kind's meta is built once
    make = link_requests(spider, depth=2, referer=SITE)
    for kind in ("page", "requisite", "page"):
        meta = {"depth": 2, REFERER: SITE, KIND: kind}
        fast = make(url, kind)
        slow = Request(url, callback=spider.parse, errback=spider.on_error, meta=meta)
        assert_same_request(fast, slow, spider)
        fast.meta["depth"] = 0
    # the crawl state's requests, as from_stored built them before
    data = StoredRequest(key=url, url=url, depth=4, referer=SITE, meta={"x": [1]})
    slow_meta = {
        "depth": 4,
        "webspider_round": 0,
        "_webspider_from_state": True,
        REFERER: SITE,
        KIND: "page",
        "x": [1],
    }
    slow = Request(url, callback=spider.parse, errback=spider.on_error, meta=slow_meta)
    assert_same_request(from_stored(data, spider), slow, spider)


def test_a_verbatim_url_asked_for_stays_verbatim(spider):
    # a request whose meta asks Scrapy not to quote its URL keeps asking
    meta = {"verbatim_url": True}
    request = safe_url_request("http://site.test/a b", meta=meta)
    assert request.url == "http://site.test/a b"
    assert request.meta == {"verbatim_url": True}
    assert safe_url_request("http://site.test/a", meta={}).meta == {}


def test_scrapy_skips_the_quoting_of_a_verbatim_url():
    # what safe_url_request relies on for its speed (not for its result)
    assert Request("http://site.test/a b", meta={"verbatim_url": True}).url == (
        "http://site.test/a b"
    )


def test_without_a_spider_the_requests_name_no_callback():
    # Scrapy then calls the crawl's spider's parse, as for any such request
    request = page_request(None, SITE, depth=0)
    assert (request.callback, request.errback) == (None, None)
    request = link_requests(None, depth=1, referer=SITE)(SITE, "page")
    assert (request.callback, request.errback) == (None, None)


def test_page_spider(spider):
    assert page_spider(spider.crawler) is spider
    assert page_spider(get_crawler(Spider)) is None  # no spider yet
    crawler = get_crawler(Spider)
    crawler.spider = Spider("plain")  # no on_error: not a page spider
    assert page_spider(crawler) is None


# -- where page requests are built -----------------------------------------------
@deferred_f_from_coro_f
async def test_start_requests(spider):
    requests = [request async for request in spider.start()]
    assert [r.url for r in requests] == [SITE, "http://site.test/b"]
    for request in requests:
        assert request.meta == {"depth": 0}
        assert_page_callbacks(request, spider)


def test_links_of_a_page(spider):
    body = b'<a href="/a">a</a><img src="/i.png">'
    response = HtmlResponse(
        SITE, body=body, encoding="utf-8", request=Request(SITE, meta={"depth": 1})
    )
    requests = [r for r in spider.parse(response) if isinstance(r, Request)]
    assert [(r.url, r.meta) for r in requests] == [
        ("http://site.test/a", {"depth": 2, REFERER: SITE, KIND: "page"}),
        ("http://site.test/i.png", {"depth": 2, REFERER: SITE, KIND: "requisite"}),
    ]
    for request in requests:
        assert_page_callbacks(request, spider)


def test_seeds_of_a_round(spider):
    # A round's seeds are queued in the crawl state at depth 0 (next_round)
    # and come back out as page requests of the spider.
    stored = StoredRequest(
        key="http://site.test/deep",
        url="http://site.test/deep",
        depth=0,
        round=2,
        referer=SITE,
        kind="requisite",
        priority=0,
        method="GET",
        meta={},
    )
    request = from_stored(stored, spider)
    assert request.url == "http://site.test/deep"
    # marked as the crawl state's (a redirect of it is stored without the
    # headers the downloader middlewares set: webspider.frontier.requestdata)
    assert request.meta == {
        "depth": 0,
        ROUND: 2,
        REFERER: SITE,
        KIND: "requisite",
        "_webspider_from_state": True,
    }
    assert_page_callbacks(request, spider)


def test_urls_of_a_sitemap(tmp_path):
    spider = make_spider(tmp_path, WEBSPIDER_ROBOTSTXT_SITEMAPS=True)
    seeder = build_from_crawler(SitemapSeeder, spider.crawler)
    url = "http://site.test/sitemap.xml"
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://site.test/one</loc></url>"
        b"<url><loc>http://site.test/two</loc></url>"
        b"</urlset>"
    )
    response = XmlResponse(
        url, body=body, request=Request(url, meta={"webspider_sitemap": 1})
    )
    requests = list(seeder.parse_sitemap(response))
    assert [r.url for r in requests] == ["http://site.test/one", "http://site.test/two"]
    for request in requests:
        assert request.meta == {"depth": 1, REFERER: url, KIND: "page"}
        assert_page_callbacks(request, spider)


def test_checks_of_outside_links(tmp_path):
    spider = make_spider(tmp_path, WEBSPIDER_CHECK_EXTERNAL=True)
    checker = build_from_crawler(LinkCheckMiddleware, spider.crawler)
    request = checker.check_request("http://other.test/x", SITE)
    assert request.method == "HEAD"
    assert request.meta == {CHECK_ONLY: True, "allow_offsite": True, REFERER: SITE}
    assert_page_callbacks(request, spider)


def test_every_page_request_carries_the_same_callback_objects(spider):
    # Scrapy caches what it learns of a callback (is it a generator that
    # returns a value: inspect.getsource and ast.parse, ~1 ms) weakly keyed
    # by the callback object: a fresh bound method per request would have it
    # asked again whenever the cached one died with its request.
    made = link_requests(spider, depth=1, referer=SITE)
    stored = StoredRequest(
        key="http://site.test/c", url="http://site.test/c", depth=0, round=0,
        referer=None, kind="page", priority=0, method="GET", meta={},
    )  # fmt: skip
    requests = [
        page_request(spider, SITE, depth=0),
        made("http://site.test/a", "page"),
        made("http://site.test/b", "requisite"),
        from_stored(stored, spider),
    ]
    assert all(r.callback is requests[0].callback for r in requests)
    assert all(r.errback is requests[0].errback for r in requests)
