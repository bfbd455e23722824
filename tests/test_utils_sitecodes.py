"""Site codes: URLs kept as <site code><path> in records."""

from __future__ import annotations

from tests.support.records import store as store  # noqa: PLC0414
from webspider.utils.sitecodes import SiteCodes, is_short, site_of


def test_site_of():
    assert site_of("https://h.test:8080/a/b?c") == "https://h.test:8080"
    assert site_of("http://h.test") == "http://h.test"
    assert site_of("file:///tmp/x") == "file://"


def test_a_url_goes_short_and_back(store):
    codes = SiteCodes(store.records("t.sites"))
    urls = [
        "https://www.example.org/docs/a.html",
        "https://www.example.org/",
        "http://other.test:81/r?to=http://x.test/",
        "http://bare.test",
    ]
    shorts = [codes.short(url) for url in urls]
    assert shorts[:3] == ["1/docs/a.html", "1/", "2/r?to=http://x.test/"]
    assert all(is_short(s) for s in shorts)
    assert not any(is_short(url) for url in urls)
    # another worker of the same state (or a resumed crawl) reads them back
    again = SiteCodes(store.records("t.sites"))
    assert [again.long(s) for s in shorts] == urls
    assert [again.url(s) for s in shorts] == urls
    assert again.url("http://h.test/kept") == "http://h.test/kept"  # as written before
    assert again.long("zz/x") is None  # no such site


def test_workers_agree_on_codes(store):
    one, two = SiteCodes(store.records("t.sites")), SiteCodes(store.records("t.sites"))
    assert one.code("http://h") == "1"
    assert two.code("http://o") == "2"
    assert two.code("http://h") == "1"
    assert one.site("2") == "http://o"
