from __future__ import annotations

from pydispatch import dispatcher
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from webspider import signals
from webspider.directives.pageevents import PageEventsMiddleware


def handler(**kwargs):
    handler.calls.append(kwargs)


handler.calls = []


def test_listened_follows_connect_and_disconnect():
    crawler = get_crawler(Spider)
    assert not signals.listened(crawler, signals.links_queued)
    crawler.signals.connect(handler, signal=signals.links_queued)
    try:
        assert signals.listened(crawler, signals.links_queued)
        assert not signals.listened(crawler, signals.page_complete)
    finally:
        crawler.signals.disconnect(handler, signal=signals.links_queued)
    assert not signals.listened(crawler, signals.links_queued)


def test_a_handler_of_every_signal_listens():
    crawler = get_crawler(Spider)
    dispatcher.connect(handler, signal=dispatcher.Any, sender=dispatcher.Any)
    try:
        assert signals.listened(crawler, signals.page_found)
    finally:
        dispatcher.disconnect(handler, signal=dispatcher.Any, sender=dispatcher.Any)
    assert not signals.listened(crawler, signals.page_found)


async def _output(items):
    for item in items:
        yield item


def _run(mw, response, items):
    """The middleware's output (nothing in it awaits: stepped by hand)."""
    agen = mw.process_spider_output(response, _output(items))
    collected = []
    while True:
        try:
            agen.__anext__().send(None)
        except StopIteration as done:
            collected.append(done.value)
        except StopAsyncIteration:
            return collected


def test_page_events_without_handlers_pass_the_output_unchanged():
    crawler = get_crawler(Spider)
    mw = PageEventsMiddleware.from_crawler(crawler)
    response = HtmlResponse(
        "http://a.test/", body=b"<html></html>", request=Request("http://a.test/")
    )
    out = [{"page": 1}, Request("http://a.test/1"), Request("http://a.test/2")]
    # items go at once, requests after the callback, in order
    assert _run(mw, response, out) == [out[0], out[1], out[2]]


def test_page_events_with_handlers_are_sent_and_may_drop_urls():
    crawler = get_crawler(Spider)
    mw = PageEventsMiddleware.from_crawler(crawler)
    response = HtmlResponse(
        "http://a.test/", body=b"<html></html>", request=Request("http://a.test/")
    )
    sent = []

    def queued(url, depth, urls):
        sent.append(("queued", url, list(urls)))
        urls.remove("http://a.test/2")

    def complete(url, status, error):
        sent.append(("complete", url, status, error))

    crawler.signals.connect(queued, signal=signals.links_queued)
    crawler.signals.connect(complete, signal=signals.page_complete)
    try:
        out = [Request("http://a.test/1"), Request("http://a.test/2")]
        assert _run(mw, response, out) == [out[0]]
    finally:
        crawler.signals.disconnect(queued, signal=signals.links_queued)
        crawler.signals.disconnect(complete, signal=signals.page_complete)
    assert sent == [
        ("queued", "http://a.test/", ["http://a.test/1", "http://a.test/2"]),
        ("complete", "http://a.test/", 200, None),
    ]
