import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured, StopDownload
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from webspider.reports.linkcheck import LinkCheckMiddleware


def middleware(**settings) -> LinkCheckMiddleware:
    crawler = get_crawler(Spider, {"WEBSPIDER_CHECK_EXTERNAL": True, **settings})
    crawler.stats.open_spider()
    return build_from_crawler(LinkCheckMiddleware, crawler)


def test_off_by_default():
    with pytest.raises(NotConfigured):
        build_from_crawler(LinkCheckMiddleware, get_crawler(Spider))


def test_check_requests_are_head_and_allowed_offsite():
    request = middleware().check_request("https://other.example/x", "https://site/")
    assert request.method == "HEAD"
    assert request.meta["webspider_check_only"] is True
    assert request.meta["allow_offsite"] is True
    assert request.meta["webspider_referer"] == "https://site/"


@pytest.mark.parametrize(
    ("reason", "referer", "checked"),
    [
        ("scope", "https://site/", True),
        ("scope", None, False),  # e.g. the robots.txt of an out-of-scope host
        ("robots", "https://site/", False),
    ],
)
def test_should_check(reason, referer, checked):
    assert middleware().should_check("https://other/x", reason, referer) is checked


@pytest.mark.parametrize(
    ("status", "retried"), [(405, True), (501, True), (404, False), (200, False)]
)
def test_refused_head_is_retried_with_get(status, retried):
    mw = middleware()
    request = Request(
        "https://other/x", method="HEAD", meta={"webspider_check_only": True}
    )
    result = mw.process_response(request, Response(request.url, status=status))
    if retried:
        assert isinstance(result, Request)
        assert (result.method, result.dont_filter) == ("GET", True)
        assert result.meta["webspider_check_only"] is True
        assert mw.crawler.stats.get_value("webspider/linkcheck/get_fallback_count") == 1
    else:
        assert isinstance(result, Response)


def test_pages_are_left_alone():
    mw = middleware()
    request = Request("https://site/x", method="HEAD")
    response = Response(request.url, status=405)
    assert mw.process_response(request, response) is response
    mw.headers_received(Request("https://site/x"))  # no StopDownload for pages


def test_a_check_get_stops_after_the_headers():
    with pytest.raises(StopDownload) as info:
        middleware().headers_received(
            Request("https://other/x", meta={"webspider_check_only": True})
        )
    assert info.value.fail is False
