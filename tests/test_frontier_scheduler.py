from __future__ import annotations

import sqlite3

from scrapy import signals
from scrapy.core.engine import ExecutionEngine, _Slot
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.support.crawl import crawl
from tests.support.server import html
from webspider.signals import crawl_state_closing, crawl_state_opened
from webspider.spiders.webspider import WebSpider


def test_engine_still_keeps_requests_in_progress_where_the_barrier_reads_them():
    # StateScheduler reads engine._slot.inprogress (no public equivalent);
    # this fails loudly if a Scrapy upgrade moves it.
    crawler = get_crawler(WebSpider)
    engine = ExecutionEngine(crawler, lambda _: None)
    try:
        assert engine._slot is None
        assert "inprogress" in _Slot.__init__.__code__.co_names
    finally:
        engine.downloader.close()


class RecordingExtension:
    """An extension of a user's, keeping one record per page in the state."""

    def __init__(self, crawler):
        self.store = None
        self.closing_reason = None
        crawler.signals.connect(self.opened, signal=crawl_state_opened)
        crawler.signals.connect(self.page, signal=signals.response_received)
        crawler.signals.connect(self.closing, signal=crawl_state_closing)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def opened(self, records):
        self.store = records

    def page(self, response, request):
        self.store.records("test.pages").put(response.url, response.status)

    #: the records as the crawl state held them when it closed
    at_close: dict[str, object] = {}

    def closing(self, reason, records):
        self.closing_reason = reason
        records.records("test.pages").put("closed", reason)
        RecordingExtension.at_close = dict(records.records("test.pages").items())


@deferred_f_from_coro_f
async def test_features_keep_records_in_the_crawl_state(tmp_path, server):
    server.add("/", html('<a href="/a">a</a> <a href="/b">b</a>'))
    server.add("/a", html("a"))
    server.add("/b", html("b"))
    ext = "tests.test_frontier_scheduler.RecordingExtension"
    result = await crawl(
        tmp_path, settings={"EXTENSIONS": {ext: 0}}, start_urls=server.url("/")
    )
    assert len(result.items) == 3
    assert RecordingExtension.at_close == {
        "closed": "finished",
        server.url("/robots.txt"): 404,
        server.url("/"): 200,
        server.url("/a"): 200,
        server.url("/b"): 200,
    }
    # a finished crawl's state is not read again (the next run starts a
    # fresh one): its records are given back with the file's free pages
    path = tmp_path / "out" / ".webspider-state.sqlite3"
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT COUNT(*) FROM record").fetchone() == (0,)
        assert db.execute("PRAGMA freelist_count").fetchone() == (0,)
    finally:
        db.close()
