"""End-to-end: the real spider crawls real local servers (three host names)."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, TestServer, html
from webspider.page.links import PAGE, LinkRule
from webspider.spiders.webspider import WebSpider

pytestmark = pytest.mark.e2e

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF = b"%PDF-1.4\n" + b"0" * 5000 + b"\n%%EOF\n"
CSS = "body { background: url('bg.png') }"


def build_site(site: TestServer, other: TestServer, www: TestServer) -> None:
    s, o, w = site.port, other.port, www.port
    site.add(
        "/",
        html(
            f"""<a href="page1.html">relative</a>
            <a href="http://site.test:{s}/page2.html">absolute</a>
            <a href="//site.test:{s}/dir/page3.html">protocol-relative</a>
            <a href="page1.html#section">fragment</a>
            <a href="/search?q=a&amp;b=2">query</a>
            <a href="/base/">base</a>
            <a href="http://other.test:{o}/">other host</a>
            <a href="http://www.site.test:{w}/">subdomain</a>
            <a href="/redirect/302?to=/page5.html">redirect</a>
            <a href="/redirect/302?to=http://other.test:{o}/secret">offsite redirect</a>
            <a href="/missing.html">404</a>
            <a href="mailto:someone@site.test">mail</a>
            <a href="javascript:void(0)">js</a>
            <img src="/img.png" alt="an image"><a href="/doc.pdf">pdf</a>""",
            title="Home",
            head='<link rel="stylesheet" href="/style.css">',
        ),
    )
    site.add(
        "/page1.html", html('<a href="/">home</a> <a href="page2.html">2</a>', "One")
    )
    site.add("/page2.html", html('<a href="page1.html">1</a>', title="Two"))
    site.add("/dir/page3.html", html('<a href="../page1.html">1</a>', title="Three"))
    site.add("/search", html('<a href="/search?b=2&amp;q=a">same</a>', title="Search"))
    site.add(
        "/base/",
        html('<a href="page4.html">4</a>', title="Base", head='<base href="/dir/">'),
    )
    site.add("/dir/page4.html", html("leaf", title="Four"))
    site.add("/page5.html", html("redirected here", title="Five"))
    site.add("/style.css", Page(CSS, content_type="text/css"))
    site.add("/bg.png", Page(PNG, content_type="image/png"))
    site.add("/img.png", Page(PNG, content_type="image/png"))
    site.add("/doc.pdf", Page(PDF, content_type="application/pdf"))
    other.add(
        "/",
        html(
            f'<a href="http://site.test:{s}/page1.html">back</a> <a href="/o1.html">o1</a>',
            "Other",
        ),
    )
    other.add("/o1.html", html("other leaf", title="O1"))
    www.add("/", html('<a href="/w1.html">w1</a>', title="WWW"))
    www.add("/w1.html", html("www leaf", title="W1"))


SITE_PAGES = {
    # path: (depth, referer path or None)
    "/": (0, None),
    "/page1.html": (1, "/"),
    "/page2.html": (1, "/"),
    "/dir/page3.html": (1, "/"),
    "/search?q=a&b=2": (1, "/"),
    "/base/": (1, "/"),
    "/page5.html": (1, "/"),
    "/style.css": (1, "/"),
    "/img.png": (1, "/"),
    "/doc.pdf": (1, "/"),
    "/dir/page4.html": (2, "/base/"),
    "/bg.png": (2, "/style.css"),
}


def site_requests(other: TestServer) -> list[str]:
    """Every path of site.test a crawl must request, each exactly once."""
    return [
        "/robots.txt",
        *SITE_PAGES,
        "/redirect/302?to=/page5.html",
        f"/redirect/302?to=http://other.test:{other.port}/secret",
        "/missing.html",
    ]


@pytest.fixture
def site(server, other_server, www_server):
    build_site(server, other_server, www_server)
    return server, other_server, www_server


def assert_site_pages(result, site: TestServer, other: TestServer) -> None:
    items = result.exported()
    by_url = {item["url"]: item for item in items}
    for path, (depth, referer) in SITE_PAGES.items():
        item = by_url[site.url(path)]
        assert item["depth"] == depth, path
        assert item["referer"] == (site.url(referer) if referer else None), path
        assert item["round"] == 0
    # every page and file of the site requested exactly once
    counts = Counter(site.requested())
    assert sorted(counts) == sorted(site_requests(other))
    assert set(counts.values()) == {1}, counts


@deferred_f_from_coro_f
async def test_scope_host(tmp_path, site):
    server, other, www = site
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert_site_pages(result, server, other)
    assert sorted(i["url"] for i in result.exported()) == sorted(
        server.url(p) for p in SITE_PAGES
    )
    assert other.requested() == []
    assert www.requested() == []
    assert (
        result.stats["webspider/skipped/url_count/scope"] == 3
    )  # other, www, offsite redirect


@deferred_f_from_coro_f
async def test_scope_domain(tmp_path, site):
    server, other, www = site
    result = await crawl(tmp_path, start_urls=server.url("/"), scope="domain")
    assert_site_pages(result, server, other)
    assert Counter(www.requested()) == Counter(["/robots.txt", "/", "/w1.html"])
    assert other.requested() == []
    urls = {i["url"] for i in result.exported()}
    assert {www.url("/"), www.url("/w1.html")} <= urls


@deferred_f_from_coro_f
async def test_scope_all(tmp_path, site):
    server, other, www = site
    result = await crawl(tmp_path, start_urls=server.url("/"), scope="all")
    counts = Counter(server.requested())
    assert set(counts.values()) == {1}
    assert sorted(counts) == sorted(site_requests(other))
    assert Counter(other.requested()) == Counter(
        ["/robots.txt", "/", "/o1.html", "/secret"]
    )
    assert Counter(www.requested()) == Counter(["/robots.txt", "/", "/w1.html"])
    by_url = {i["url"]: i for i in result.exported()}
    assert by_url[other.url("/o1.html")]["depth"] == 2
    # /secret is a 404 on other.test: no item, but it was requested once
    assert other.url("/secret") not in by_url


@deferred_f_from_coro_f
async def test_item_fields_describe_what_the_server_sent(tmp_path, site):
    server, _, _ = site
    result = await crawl(tmp_path, start_urls=server.url("/"))
    by_url = {i["url"]: i for i in result.exported()}
    png = by_url[server.url("/img.png")]
    assert png["content_type"] == "image/png"
    assert png["size"] == len(PNG)
    assert png["content_hash"] == hashlib.sha256(PNG).hexdigest()
    assert png["title"] is None and png["links"] == 0 and png["status"] == 200
    assert by_url[server.url("/doc.pdf")]["size"] == len(PDF)
    home = by_url[server.url("/")]
    assert home["title"] == "Home"
    assert home["content_type"] == "text/html"
    # distinct http(s) links: page1 (twice, once with a fragment), page2, page3,
    # search, base, other, www, 2 redirects, missing, img, pdf, style.css
    assert home["links"] == 13
    assert home["redirects"] == [] and home["referer"] is None
    five = by_url[server.url("/page5.html")]
    assert five["redirects"] == [server.url("/redirect/302?to=/page5.html")]
    assert five["fetched_at"].endswith("+00:00")
    css = by_url[server.url("/style.css")]
    assert css["links"] == 1 and css["content_type"] == "text/css"
    assert set(home) == {
        "url",
        "redirects",
        "status",
        "depth",
        "round",
        "referer",
        "content_type",
        "size",
        "content_hash",
        "duplicate_of",
        "title",
        "links",
        "path",
        "fetched_at",
        "noindex",
    }


@deferred_f_from_coro_f
async def test_start_urls_are_deduplicated_and_start_page_fetched_once(
    tmp_path, server
):
    server.add("/", html('<a href="/a">a</a><a href="/">self</a>', "Home"))
    server.add("/a", html('<a href="/">home</a><a href="/b">b</a>', "A"))
    server.add("/b", html("b", "B"))
    seeds = f"{server.url('/')},{server.url('/a')},{server.url('/#frag')}"
    result = await crawl(tmp_path, start_urls=seeds)
    assert Counter(server.requested()) == Counter(["/robots.txt", "/", "/a", "/b"])
    depths = {i["url"]: i["depth"] for i in result.items}
    assert depths == {server.url("/"): 0, server.url("/a"): 0, server.url("/b"): 1}


@deferred_f_from_coro_f
async def test_breadth_first_order(tmp_path, server):
    # Two chains from the start page; breadth-first fetches level by level.
    server.add("/", html('<a href="/a1">a</a><a href="/b1">b</a>', "Home"))
    for chain in "ab":
        for i in range(1, 4):
            server.add(
                f"/{chain}{i}",
                html(f'<a href="/{chain}{i + 1}">next</a>', f"{chain}{i}"),
            )
        server.add(f"/{chain}4", html("end", f"{chain}4"))
    await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={"CONCURRENT_REQUESTS": 1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1},
    )
    pages = server.requested_pages()
    levels = [int(p[2]) if p != "/" else 0 for p in pages]
    assert levels == sorted(levels), pages


@deferred_f_from_coro_f
async def test_an_outside_link_on_many_pages_is_skipped_once(
    tmp_path, server, other_server
):
    outside = other_server.url("/x")
    for path in ("/", "/a", "/b"):
        links = '<a href="/a">a</a><a href="/b">b</a>'
        server.add(path, html(f'{links}<a href="{outside}">out</a>', path))
    result = await crawl(tmp_path, start_urls=server.url("/"), log_skipped="1")
    assert other_server.requested() == []
    assert result.stats["webspider/skipped/url_count/scope"] == 1
    assert [r["url"] for r in result.exported("skipped.jsonl")] == [outside]


class PagesOnlySpider(WebSpider):
    """Follows <a href> only: images and stylesheets are not candidates."""

    link_rules = (LinkRule("a", "href", PAGE),)


@deferred_f_from_coro_f
async def test_a_spider_subclass_chooses_its_own_link_rules(tmp_path, server):
    server.add(
        "/",
        html(
            '<a href="/a">a</a><img src="/i.png">',
            "Home",
            head='<link rel="stylesheet" href="/s.css">',
        ),
    )
    server.add("/a", html("leaf", "A"))
    await crawl(tmp_path, spidercls=PagesOnlySpider, start_urls=server.url("/"))
    assert sorted(server.requested_pages()) == ["/", "/a"]
