"""Unreadable sitemaps (-a sitemaps=1): each is one warning line, never a
traceback, and what can be read of it, and every other sitemap, is used."""

from __future__ import annotations

import gzip
import logging

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html

HEAD = (
    '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
)


def url(loc: str) -> str:
    return f"<url><loc>{loc}</loc></url>"


@deferred_f_from_coro_f
async def test_unreadable_sitemaps_are_one_warning_each(tmp_path, server, caplog):
    site = server.url
    # 20 MB of blanks between two good entries and a third: 20 KB packed
    bomb = gzip.compress(
        (
            HEAD
            + url(site("/b1"))
            + url(site("/b2"))
            + " " * 20_000_000
            + url(site("/b3"))
            + "</urlset>"
        ).encode()
    )
    no_scheme = (
        HEAD
        + url(site("/n1"))
        + url(f"site.test:{server.port}/n2")
        + url("/n3")
        + url(site("/n4"))
        + "</urlset>"
    )
    malformed = (
        HEAD
        + url(site("/m1"))
        + url(site("/m2?a=1&b=2"))  # a bare "&"
        + f"<url><loc>{site('/m3')}</lo></url>"  # a wrong end tag
        + url(site("/m4"))
        # and no </urlset>: cut short
    )
    server.add(
        "/robots.txt",
        Page(
            "User-agent: *\nDisallow: /private\n"
            f"Sitemap: {site('/bomb.xml.gz')}\n"
            f"Sitemap: {site('/no-scheme.xml')}\n"
            f"Sitemap: {site('/malformed.xml')}\n"
            "Sitemap: ftp://elsewhere.test/sitemap.xml\n"
            "Sitemap: /good.xml\n",  # relative: read against the origin
            content_type="text/plain",
        ),
    )
    server.add("/bomb.xml.gz", Page(bomb, content_type="application/gzip"))
    server.add("/no-scheme.xml", Page(no_scheme, content_type="application/xml"))
    server.add("/malformed.xml", Page(malformed, content_type="application/xml"))
    server.add(
        "/good.xml",
        Page(HEAD + url(site("/g1")) + "</urlset>", content_type="text/xml"),
    )
    pages = ["/", "/b1", "/b2", "/b3", "/n1", "/n4", "/m1", "/m2", "/m3", "/m4", "/g1"]
    for path in pages:
        server.add(path, html(path))
    with caplog.at_level(logging.INFO):
        result = await crawl(
            tmp_path,
            settings={"DOWNLOAD_MAXSIZE": 2 * 1024 * 1024},
            start_urls=site("/"),
            sitemaps="1",
        )
    requested = set(server.requested())
    assert requested >= {
        "/b1",
        "/b2",
        "/n1",
        "/n4",
        "/m1",
        "/m2?a=1&b=2",
        "/m3",
        "/m4",
        "/g1",
        "/good.xml",
    }
    assert "/b3" not in requested  # past DOWNLOAD_MAXSIZE unpacked
    assert not requested & {"/n2", "/n3", f"/site.test:{server.port}/n2"}
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "itemap" in r.getMessage()
    ]
    assert len(warnings) == 4, warnings
    assert all("\n" not in w for w in warnings)
    for name, said in [
        ("/bomb.xml.gz", "unpacks to more than 2097152 bytes"),
        ("/no-scheme.xml", "2 <loc> not an http(s) URL"),
        ("/malformed.xml", "malformed XML"),
        ("ftp://elsewhere.test/sitemap.xml", "not an http(s) URL"),
    ]:
        assert [w for w in warnings if name in w and said in w], (name, warnings)
    assert result.stats["webspider/sitemaps/warning_count"] == 3
    assert result.stats["webspider/sitemaps/bad_url_count"] == 3
