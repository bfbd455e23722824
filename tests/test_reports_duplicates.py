"""The duplicate-content index, over records in memory and in the crawl state."""

from __future__ import annotations

import hashlib

from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from tests.support.records import reopen
from tests.support.records import store as store  # noqa: PLC0414
from webspider import signals
from webspider.keys import STATS_DUPLICATES, STATS_STATE_RESUMED
from webspider.reports.duplicates import NS_CONTENT, DuplicateContent, _content_key
from webspider.reports.fingerprint import EXACT, NORMALIZED
from webspider.spiders.webspider import WebSpider
from webspider.utils.urlcodes import UrlCodes


def page(url: str, body: str) -> tuple[HtmlResponse, str]:
    raw = body.encode()
    return HtmlResponse(url, body=raw), hashlib.sha256(raw).hexdigest()


def opened(store, resumed: bool = False, **settings) -> DuplicateContent:
    crawler = get_crawler(WebSpider, settings)
    crawler.stats.open_spider()
    crawler.stats.set_value(STATS_STATE_RESUMED, int(resumed))
    ext = build_from_crawler(DuplicateContent, crawler)
    crawler.signals.send_catch_log(signals.crawl_state_opened, records=store)
    return ext


def test_the_first_url_of_each_content_and_the_duplicates_found(store):
    ext = opened(store)
    assert ext.duplicate_of(*page("http://s/a", "<p>one</p>")) is None
    assert ext.duplicate_of(*page("http://s/c", "<p>two</p>")) is None
    assert ext.duplicate_of(*page("http://s/b", "<p>one</p>")) == "http://s/a"
    assert ext.duplicate_of(*page("http://s/a", "<p>one</p>")) is None  # itself
    assert list(ext.found()) == [("http://s/b", "http://s/a", "exact")]
    assert ext.crawler.stats.get_value(STATS_DUPLICATES) == 1
    assert ext.crawler.stats.get_value(f"{STATS_DUPLICATES}/exact") == 1


def test_normalized_duplicates(store):
    ext = opened(store, WEBSPIDER_DUPLICATES_NORMALIZE=True)
    ext.duplicate_of(*page("http://s/a", "<p>x</p><!-- 12:00:01 -->"))
    assert ext.duplicate_of(*page("http://s/b", "<p>x</p>")) == "http://s/a"
    assert list(ext.found()) == [("http://s/b", "http://s/a", "normalized")]
    assert ext.counts == {"exact": 0, "normalized": 1}


def test_a_resumed_crawl_continues_the_index_and_counts_a_page_once(request, store):
    ext = opened(store)
    ext.duplicate_of(*page("http://s/a", "same"))
    ext.duplicate_of(*page("http://s/b", "same"))
    store = reopen(request, store)
    resumed = opened(store, resumed=True)
    # /b fetched again (it was in flight at the kill), then a new duplicate
    assert resumed.duplicate_of(*page("http://s/b", "same")) == "http://s/a"
    assert resumed.duplicate_of(*page("http://s/c", "same")) == "http://s/a"
    assert resumed.count == 2
    assert [url for url, _, _ in resumed.found()] == ["http://s/b", "http://s/c"]
    assert resumed.crawler.stats.get_value(STATS_DUPLICATES) == 2


def test_a_new_crawl_on_the_state_starts_empty(request, store):
    ext = opened(store)
    ext.duplicate_of(*page("http://s/a", "same"))
    ext.duplicate_of(*page("http://s/b", "same"))
    store = reopen(request, store)
    fresh = opened(store, resumed=False)
    assert fresh.count == 0
    assert list(fresh.found()) == []
    assert store.records(NS_CONTENT).count() == 0
    assert fresh.duplicate_of(*page("http://s/b", "same")) is None


def test_content_keys_are_short_and_keep_the_kinds_apart():
    digest = hashlib.sha256(b"<p>page</p>").hexdigest()
    exact = _content_key(EXACT, digest)
    assert len(exact) == 17
    assert exact != _content_key(NORMALIZED, digest)
    other = hashlib.sha256(b"<p>other</p>").hexdigest()
    assert exact != _content_key(EXACT, other)
    assert _content_key(EXACT, "not hex") == "exact:not hex"


def test_the_first_url_is_kept_as_its_code(store):
    ext = opened(store)
    url = "https://www.example.org/docs/first.html"
    ext.duplicate_of(*page(url, "body"))
    [(_, stored)] = store.records(NS_CONTENT).items()
    # the crawl's shared code of the URL (4 characters), not the URL
    assert stored == UrlCodes(store).find([url])[url]
    assert len(stored) == 4
    assert ext.duplicate_of(*page(url + "?again", "body")) == url
