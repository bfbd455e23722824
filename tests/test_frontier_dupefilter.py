from types import SimpleNamespace

from scrapy import Request
from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.test import get_crawler

from webspider.frontier.dupefilter import URLDupeFilter, request_key, seen_urls
from webspider.keys import SEEN_FILE
from webspider.spiders.webspider import WebSpider


def test_keys():
    assert request_key(Request("http://a.test:80/x#f")) == "http://a.test/x"
    assert (
        request_key(Request("http://a.test/x", method="HEAD")) == "HEAD http://a.test/x"
    )
    post = request_key(Request("http://a.test/x", method="POST", body=b"1"))
    # the same in every process (it is written to JOBDIR): sha1(b"1")
    assert post == "POST http://a.test/x 356a192b7913b04c54574d18c28d46e6395428ab"


def make_filter(settings=None):
    crawler = get_crawler(WebSpider, settings or {})
    crawler.spider = WebSpider()
    df = URLDupeFilter.from_crawler(crawler)
    df.open()
    # where the open engine holds it (crawler.engine.scheduler.df)
    crawler.engine = SimpleNamespace(scheduler=SimpleNamespace(df=df))
    return df, crawler


def test_canonical_duplicates_are_filtered_and_shared_with_the_spider():
    df, crawler = make_filter()
    assert seen_urls(crawler) is df.urls
    assert not df.request_seen(Request("http://a.test/p?b=1&a=2"))
    assert df.request_seen(Request("HTTP://A.test:80/p?a=2&b=1#x"))
    assert not df.request_seen(Request("https://a.test/p?a=2&b=1"))
    assert "http://a.test/p?a=2&b=1" in seen_urls(crawler)


def test_jobdir_persists_the_seen_set(tmp_path):
    df, _ = make_filter({"JOBDIR": str(tmp_path)})
    df.request_seen(Request("http://a.test/1"))
    df.request_seen(Request("http://a.test/2"))
    df.close("shutdown")
    assert (tmp_path / SEEN_FILE).read_text().split() == [
        "http://a.test/1",
        "http://a.test/2",
    ]
    again, _ = make_filter({"JOBDIR": str(tmp_path)})
    assert again.request_seen(Request("http://a.test/2"))
    assert not again.request_seen(Request("http://a.test/3"))
    again.close("finished")


def test_the_urls_seen_are_get_urls_only():
    # a HEAD check or a POST is no fetch of the URL's page: keyed apart, and
    # not counted among the URLs seen
    df, crawler = make_filter()
    assert not df.request_seen(Request("http://a.test/x", method="HEAD"))
    assert not df.request_seen(Request("http://a.test/x", method="POST", body=b"1"))
    assert df.request_seen(Request("http://a.test/x", method="HEAD"))
    assert "http://a.test/x" not in df.urls
    assert len(df.urls) == 0
    assert not df.request_seen(Request("http://a.test/x"))
    assert "http://a.test/x" in seen_urls(crawler)
    assert len(df.urls) == 1


def test_the_jobdir_file_keeps_every_key_in_request_order(tmp_path):
    df, _ = make_filter({"JOBDIR": str(tmp_path)})
    df.request_seen(Request("http://a.test/1"))
    df.request_seen(Request("http://a.test/1", method="HEAD"))
    df.request_seen(Request("http://a.test/2"))
    df.request_seen(Request("http://a.test/1"))
    df.close("shutdown")
    assert (tmp_path / SEEN_FILE).read_bytes() == (
        b"http://a.test/1\nHEAD http://a.test/1\nhttp://a.test/2\n"
    )
    again, _ = make_filter({"JOBDIR": str(tmp_path)})
    assert len(again.urls) == 2
    assert again.request_seen(Request("http://a.test/1", method="HEAD"))
    assert not again.request_seen(Request("http://a.test/2", method="HEAD"))
    again.close("finished")


def test_seen_urls_needs_the_open_engine_and_this_filter():
    crawler = get_crawler(WebSpider)
    assert seen_urls(crawler) is None  # before the engine opens
    other = RFPDupeFilter()
    crawler.engine = SimpleNamespace(scheduler=SimpleNamespace(df=other))
    assert seen_urls(crawler) is None  # another DUPEFILTER_CLASS
