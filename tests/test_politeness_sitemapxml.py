"""Reading sitemap files as far as they can be read (webspider.politeness.sitemapxml)."""

from __future__ import annotations

import gzip

import pytest

from webspider.politeness.sitemapxml import (
    SITEMAPINDEX,
    URLSET,
    escape_bare_ampersands,
    gunzip,
    read_sitemap,
    usable,
)

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*entries: str) -> bytes:
    body = "".join(f"<url><loc>{e}</loc></url>" for e in entries)
    return f'<?xml version="1.0"?><urlset {NS}>{body}</urlset>'.encode()


def test_a_plain_sitemap():
    read = read_sitemap(urlset("http://a.test/1", " http://a.test/2\n"))
    assert (read.kind, read.locs, read.problems) == (
        URLSET,
        ["http://a.test/1", "http://a.test/2"],
        [],
    )


def test_a_sitemap_index():
    body = f"<sitemapindex {NS}><sitemap><loc>http://a.test/s.xml</loc></sitemap></sitemapindex>"
    read = read_sitemap(body.encode())
    assert (read.kind, read.locs, read.problems) == (
        SITEMAPINDEX,
        ["http://a.test/s.xml"],
        [],
    )


def test_only_the_entries_own_loc_counts():
    body = (
        f'<urlset {NS} xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        "<url><loc>http://a.test/p</loc><image:image><image:loc>http://a.test/i.png"
        "</image:loc></image:image></url>"
        "<url><lastmod>2024-01-01</lastmod></url>"  # no loc: nothing
        "</urlset>"
    )
    assert read_sitemap(body.encode()).locs == ["http://a.test/p"]


def test_locs_that_are_not_http_urls_are_left_out_and_counted():
    read = read_sitemap(
        urlset(
            "http://a.test/1", "a.test/2", "/3", "", "ftp://a.test/4", "http://[::1/5"
        )
    )
    assert read.locs == ["http://a.test/1"]
    assert read.bad_locs == 5
    assert read.problems == ["5 <loc> not an http(s) URL, left out (first: 'a.test/2')"]


@pytest.mark.parametrize(
    ("body", "locs", "problem"),
    [
        # a wrong end tag, then the rest
        (
            f"<urlset {NS}><url><loc>http://a.test/1</loc></url>"
            "<url><loc>http://a.test/2</lo></url><url><loc>http://a.test/3</loc></url>"
            "</urlset>".encode(),
            ["http://a.test/1", "http://a.test/2", "http://a.test/3"],
            "malformed XML (line 1: Opening and ending tag mismatch",
        ),
        # cut short: the entry cut in two is left out (not half its URL)
        (
            f"<urlset {NS}><url><loc>http://a.test/1</loc></url>"
            "<url><loc>http://a.test/23".encode(),
            ["http://a.test/1"],
            "malformed XML (line 1: Premature end of data",
        ),
        # a bare "&": read as meant, where lxml alone would drop "&b"
        (
            urlset("http://a.test/?a=1&b=2"),
            ["http://a.test/?a=1&b=2"],
            "malformed XML (1 bare '&' read as '&amp;')",
        ),
        (b"", [], "not XML"),
        (b"not xml at all", [], "not XML"),
        (
            b"<html><body>Not found</body></html>",
            [],
            "not a sitemap (its root element is <html>)",
        ),
    ],
)
def test_malformed_xml_is_read_as_far_as_it_goes(body, locs, problem):
    read = read_sitemap(body)
    assert read.locs == locs
    assert len(read.problems) == 1
    assert read.problems[0].startswith(problem)


def test_escaped_ampersands_and_cdata_are_left_alone():
    body = urlset(
        "http://a.test/?a=1&amp;b=2&#38;c=3", "<![CDATA[http://a.test/?d=4&e=5]]>"
    )
    read = read_sitemap(body)
    assert read.locs == ["http://a.test/?a=1&b=2&c=3", "http://a.test/?d=4&e=5"]
    assert read.problems == []
    assert escape_bare_ampersands(b"a&b <![CDATA[c&d]]> e&amp;f <![CDATA[g&h") == (
        b"a&amp;b <![CDATA[c&d]]> e&amp;f <![CDATA[g&h",
        1,
    )


def test_gzip_is_unpacked_up_to_the_limit():
    packed = gzip.compress(urlset("http://a.test/1") + b" " * 100_000)
    assert read_sitemap(packed).locs == ["http://a.test/1"]
    data, problem = gunzip(gzip.compress(b"x" * 100_000), max_size=1000)
    assert (len(data), problem) == (
        1000,
        "unpacks to more than 1000 bytes (DOWNLOAD_MAXSIZE): only those are read",
    )
    assert gunzip(gzip.compress(b"x" * 1000), max_size=1000) == (b"x" * 1000, "")


def test_a_gzip_bomb_gives_what_comes_before_the_limit():
    bomb = gzip.compress(
        urlset("http://a.test/1")[:-10]
        + b" " * 50_000_000
        + b"<url><loc>http://a.test/2</loc></url></urlset>"
    )
    read = read_sitemap(bomb, max_size=1_000_000)
    assert read.locs == ["http://a.test/1"]
    assert read.problems == [
        "unpacks to more than 1000000 bytes (DOWNLOAD_MAXSIZE): only those are read"
    ]


def test_damaged_gzip_gives_what_was_unpacked():
    packed = gzip.compress(urlset(*(f"http://a.test/{i}" for i in range(2000))))
    read = read_sitemap(packed[: len(packed) // 2])
    # every URL read is whole: the entry cut in two is left out
    assert 0 < len(read.locs) < 2000
    assert read.locs == [f"http://a.test/{i}" for i in range(len(read.locs))]
    assert read.problems[0].startswith("damaged gzip data after ")


def test_entities_are_not_resolved():
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">'
        b'<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b"<urlset><url><loc>http://a.test/&x;</loc></url>"
        b"<url><loc>http://a.test/&b;</loc></url></urlset>"
    )
    read = read_sitemap(xxe)
    assert all("root" not in loc and "aaaaaaaaaa" not in loc for loc in read.locs)


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://a.test/", True),
        ("HTTPS://a.test:8443/x", True),
        ("a.test/x", False),
        ("/x", False),
        ("mailto:a@a.test", False),
        ("http:///x", False),
        ("http://a.test:99999/", False),
        ("http://[::1", False),
    ],
)
def test_usable(url, ok):
    assert usable(url) is ok
