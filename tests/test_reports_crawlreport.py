"""The crawl report's figures for the whole crawl, kept in records (memory
and the crawl state): pages counted once, counters carried across a resume,
a new crawl from zero, tables read while the state is open."""

from __future__ import annotations

import gc
import json
import weakref

from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from tests.support.records import reopen
from tests.support.records import store as store  # noqa: PLC0414
from webspider import signals
from webspider.items import PageItem
from webspider.keys import STATS_PAGES, STATS_STATE_RESUMED
from webspider.page.response import remember_response
from webspider.reports.brokenlinks import BrokenLinks
from webspider.reports.crawlreport import CrawlReport, carried
from webspider.spiders.webspider import WebSpider


def opened(store, tmp_path, resumed: bool = False):
    crawler = get_crawler(WebSpider, {"WEBSPIDER_OUTPUT": str(tmp_path)})
    crawler.stats.open_spider()
    crawler.stats.set_value(STATS_STATE_RESUMED, int(resumed))
    report = build_from_crawler(CrawlReport, crawler)
    broken = build_from_crawler(BrokenLinks, crawler)
    crawler.extensions.middlewares = (report, broken)
    crawler.signals.send_catch_log(signals.crawl_state_opened, records=store)
    return crawler, report, broken


def fetched(crawler, report, url: str, depth: int = 0, size: int = 10) -> None:
    crawler.stats.inc_value(STATS_PAGES)
    crawler.stats.inc_value("downloader/response_status_count/200")
    report.item_seen(PageItem(url=url, depth=depth, size=size))


def test_carried_counters_are_the_listed_integer_ones():
    stats = {
        "downloader/response_bytes": 5,
        "downloader/response_status_count/404": 2,
        "webspider/skipped/url_count/robots": 1,
        "webspider/state/resumed": 1,
        "start_time": "x",
        "webspider/scheduler/url_count": 9,
    }
    assert carried(stats) == {
        "downloader/response_bytes": 5,
        "downloader/response_status_count/404": 2,
        "webspider/skipped/url_count/robots": 1,
    }


def test_a_resumed_crawl_reports_the_whole_crawl(request, tmp_path, store):
    crawler, report, _ = opened(store, tmp_path)
    fetched(crawler, report, "http://s/", size=100)
    fetched(crawler, report, "http://s/a", depth=1)
    crawler.signals.send_catch_log(signals.crawl_state_committing, records=store)
    fetched(crawler, report, "http://s/b", depth=1)  # after the last commit
    store = reopen(request, store)

    crawler, report, _ = opened(store, tmp_path, resumed=True)
    assert crawler.stats.get_value(STATS_PAGES) == 2  # carried
    fetched(crawler, report, "http://s/a", depth=1)  # committed before the kill
    fetched(crawler, report, "http://s/b", depth=1)  # not acknowledged: again
    fetched(crawler, report, "http://s/c", depth=2)
    summary = report.summary("finished")
    assert summary.pages == 4  # /, a, b, c: each once
    assert summary.status_codes == {200: 5}  # the carried counter (2) + this run
    tables = report.report(summary)
    assert tables.pages_by_depth == {0: 1, 1: 2, 2: 1}
    assert tables.largest[0] == (100, "http://s/", None)


def test_a_page_seen_outside_a_crawls_leases_is_counted_once(tmp_path, store):
    # no scheduler hands out leases here (a request kept in memory is the
    # crawl's case): the page is counted on the next commit, once
    crawler, report, _ = opened(store, tmp_path)
    url = "http://s/x"
    response = HtmlResponse(url, body=b"<p>x</p>", request=Request(url))
    for _ in range(2):
        crawler.stats.inc_value(STATS_PAGES)
        report.item_seen(PageItem(url=url, size=3), response)
        crawler.signals.send_catch_log(signals.crawl_state_committing, records=store)
    assert report.summary(None).pages == 1


def test_a_new_crawl_on_the_state_starts_from_zero(request, tmp_path, store):
    crawler, report, _ = opened(store, tmp_path)
    fetched(crawler, report, "http://s/")
    crawler.signals.send_catch_log(signals.crawl_state_committing, records=store)
    store = reopen(request, store)
    crawler, report, _ = opened(store, tmp_path, resumed=False)
    assert crawler.stats.get_value(STATS_PAGES) is None
    fetched(crawler, report, "http://s/")
    assert report.summary(None).pages == 1


def test_the_files_are_written_from_the_state_before_it_closes(tmp_path, store):
    crawler, report, broken = opened(store, tmp_path)
    broken.broken(Request("http://s/gone"), 404, None, None)
    crawler.signals.send_catch_log(
        signals.crawl_state_closing, reason="finished", records=store
    )
    if hasattr(store, "close"):
        store.close()  # what the scheduler does next; nothing reads it after
    report.spider_closed("finished")
    broken.spider_closed()
    [line] = (tmp_path / "broken-links.jsonl").read_text().splitlines()
    assert json.loads(line)["url"] == "http://s/gone"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["broken"]["total"] == 1
    assert "http://s/gone" in (tmp_path / "report.html").read_text()


def test_a_page_held_until_the_commit_does_not_keep_its_response(tmp_path, store):
    # the item keeps its response (and body) alive while it lives
    # (webspider.page.response.remember_response): the report keeps what it
    # counts of it, not the item
    crawler, report, _ = opened(store, tmp_path)
    response = HtmlResponse("http://s/big", body=b"x" * 100_000)
    item = PageItem(url=response.url, depth=1, size=len(response.body))
    remember_response(item, response)
    gone = weakref.ref(response)
    report.item_seen(item)
    del item, response
    gc.collect()
    assert gone() is None  # before the commit
    crawler.signals.send_catch_log(signals.crawl_state_committing, records=store)
    summary = report.summary("finished")
    assert summary.pages == 1
    assert report.report(summary).largest == [(100_000, "http://s/big", None)]
