"""Requests as the crawl state's data and back (webspider.frontier.requestdata).

A redirect is built by Scrapy's RedirectMiddleware from the request as it
was sent, with the downloader middlewares' headers; one of a request from
the crawl state must be storable, or the scheduler keeps its target in
memory, where a kill after the redirect's ack loses it.
"""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.http import Response
from scrapy.spidermiddlewares.referer import RefererMiddleware
from scrapy.utils.test import get_crawler

from webspider.frontier.requestdata import from_stored, to_stored
from webspider.frontier.state import StoredRequest

PAGE = "http://site.test/page"
SOURCE = "http://site.test/old"
TARGET = "http://site.test/new"


def sent(request: Request) -> Request:
    """``request`` as the downloader middlewares send it."""
    request.headers.setdefault("User-Agent", "webspider")
    request.headers.setdefault("Accept-Encoding", "gzip")
    request.headers.setdefault("Authorization", "Basic c2VjcmV0")
    return request


def redirected(request: Request) -> Request:
    """What Scrapy's RedirectMiddleware makes of ``request`` answered by a 301."""
    crawler = get_crawler(Spider)
    middleware = RedirectMiddleware.from_crawler(crawler)
    middleware._referer_spider_middleware = RefererMiddleware(crawler.settings)
    response = Response(request.url, status=301, headers={"Location": TARGET})
    out = middleware.process_response(request, response)
    assert isinstance(out, Request)
    return out


def stored(**meta: object) -> StoredRequest:
    return StoredRequest(
        key=SOURCE, url=SOURCE, depth=1, referer=PAGE, meta={"webspider_x": 1, **meta}
    )


def test_a_redirect_of_a_stored_request_is_stored_without_the_sent_headers():
    source = sent(from_stored(stored(_webspider_referer_header=True), None))
    target = redirected(source)
    assert set(target.headers) > {b"Referer", b"Authorization"}  # as Scrapy made it
    data = to_stored(target, TARGET, None)
    assert data is not None
    assert (data.url, data.depth, data.referer) == (TARGET, 1, PAGE)
    assert "Basic" not in repr(data)  # never written to the state
    again = from_stored(data, None)
    # the Referer the redirect was sent with (the redirecting URL), nothing else
    assert dict(again.headers) == {b"Referer": [SOURCE.encode()]}
    assert again.meta["redirect_urls"] == [SOURCE]
    assert again.meta["webspider_x"] == 1
    # and a redirect of that again
    last = to_stored(redirected(sent(again)), TARGET, None)
    assert last is not None
    assert last.meta["redirect_urls"] == [SOURCE, TARGET]


def test_other_requests_with_headers_are_still_kept_in_memory():
    # not from the crawl state: its headers may be its maker's own
    source = sent(Request(SOURCE, meta={"webspider_referer": PAGE}))
    assert to_stored(redirected(source), TARGET, None) is None
    # from the crawl state, but not a redirect
    page = sent(from_stored(stored(), None)).replace(url=TARGET)
    assert to_stored(page, TARGET, None) is None


def test_a_stored_request_comes_back_with_its_referer_header():
    data = to_stored(
        from_stored(stored(_webspider_referer_header=True), None), SOURCE, None
    )
    assert data is not None
    assert dict(from_stored(data, None).headers) == {b"Referer": [PAGE.encode()]}
    assert "_webspider_from_state" not in data.meta
