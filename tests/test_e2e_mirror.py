"""End-to-end: the mirror pipeline against the real test server."""

import gzip
import hashlib

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html
from webspider.spiders.webspider import WebSpider

pytestmark = pytest.mark.e2e

PNG = bytes(range(256)) * 40  # binary, every byte value


def host(server):
    return f"site.test_{server.port}"


def mirror_files(result):
    root = result.output / "mirror"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def changes(result):
    return {line["url"]: line["change"] for line in result.exported("changes.jsonl")}


@deferred_f_from_coro_f
async def test_layout_and_bytes(tmp_path, server):
    server.add(
        "/",
        html('<a href="/a">a</a> <a href="/dir/">d</a> <a href="/q?b=2&amp;a=1">q</a>'),
    )
    server.add("/a", html('<img src="/img/pic.png">'))
    server.add("/dir/", html("dir"))
    server.add("/q", html("query"))
    server.add("/img/pic.png", Page(PNG, content_type="image/png"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    h = host(server)
    assert mirror_files(result) == sorted(
        [
            f"{h}/index.html",
            f"{h}/a.html",
            f"{h}/dir/index.html",
            f"{h}/q@b=2&a=1.html",
            f"{h}/img/pic.png",
        ]
    )
    root = result.output / "mirror"
    assert (root / h / "img/pic.png").read_bytes() == PNG
    items = result.by_url()
    assert items[server.url("/a")]["path"] == f"{h}/a.html"
    assert items[server.url("/img/pic.png")]["path"] == f"{h}/img/pic.png"
    assert (
        items[server.url("/img/pic.png")]["content_hash"]
        == hashlib.sha256(PNG).hexdigest()
    )
    exported = {i["url"]: i for i in result.exported()}
    assert exported[server.url("/")]["path"] == f"{h}/index.html"
    assert result.stats["webspider/mirror/written_count"] == 5
    assert set(changes(result).values()) == {"new"}
    assert not list(root.rglob("%~tmp*"))  # no temporary file left


@deferred_f_from_coro_f
async def test_content_encoding_is_undone(tmp_path, server):
    css = b"body { color: red }\n" * 100
    server.add("/", html('<link rel=stylesheet href="/s.css">'))
    server.add(
        "/s.css",
        Page(
            gzip.compress(css),
            content_type="text/css",
            headers=[("Content-Encoding", "gzip")],
        ),
    )
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert (result.output / "mirror" / host(server) / "s.css").read_bytes() == css


@deferred_f_from_coro_f
async def test_links_converted_for_offline_browsing(tmp_path, server, other_server):
    other = other_server.url("/x.png")
    server.add(
        "/",
        html(
            '<a href="/docs/page">P</a> <a href="/missing">M</a> '
            f'<img src="{other}"> <a href="/docs/page#sec">S</a> <a href="#top">T</a>',
            head='<link rel="stylesheet" href="/css/site.css">',
        ),
    )
    server.add(
        "/docs/page",
        html(
            '<a href="../">home</a> <img srcset="/i.png 1x, /i2.png 2x"> '
            '<div style="background:url(/i.png)">x</div>',
            head='<base href="/docs/">',
        ),
    )
    server.add(
        "/css/site.css",
        Page(b'@import "more.css"; a{b:url(../i.png)}', content_type="text/css"),
    )
    server.add("/css/more.css", Page(b"a{b:url('/i2.png')}", content_type="text/css"))
    server.add("/i.png", Page(b"i", content_type="image/png"))
    server.add("/i2.png", Page(b"i2", content_type="image/png"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    root = result.output / "mirror" / host(server)
    index = (root / "index.html").read_text()
    assert '<a href="docs/page.html">P</a>' in index
    assert '<a href="docs/page.html#sec">S</a>' in index
    # 404, never mirrored: absolute after the fix-up
    assert f'<a href="{server.url("/missing")}">M</a>' in index
    assert f'<img src="{other}">' in index  # out of scope: untouched
    assert '<a href="#top">T</a>' in index
    assert 'href="css/site.css"' in index
    page = (root / "docs/page.html").read_text()
    assert '<base href="page.html">' in page  # relative links now resolve from the file
    assert '<a href="../index.html">home</a>' in page
    assert 'srcset="../i.png 1x, ../i2.png 2x"' in page
    assert "url(../i.png)" in page
    css = (root / "css/site.css").read_bytes()
    assert css == b'@import "more.css"; a{b:url(../i.png)}'  # already right: unchanged
    assert (root / "css/more.css").read_bytes() == b"a{b:url('../i2.png')}"
    # content_hash describes the bytes received, not the converted file
    items = result.by_url()
    original = server.routes["/"].body_bytes()
    assert (
        items[server.url("/")]["content_hash"] == hashlib.sha256(original).hexdigest()
    )
    assert (root / "index.html").read_bytes() != original


@deferred_f_from_coro_f
async def test_fix_up_links_to_files_mirrored_later(tmp_path, server):
    # /b is written before /c is fetched (breadth-first), so its link to /c
    # leads where a file named after /c is expected ("c") when written, and
    # to the page's actual file (c.html) after the fix-up at the end.
    server.add("/", html('<a href="/b">b</a>'))
    server.add("/b", html('<a href="/c">c</a> <a href="c2">c2</a>'))
    server.add("/c", html("c"))
    server.add("/c2", html("c2"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    b = (result.output / "mirror" / host(server) / "b.html").read_text()
    assert '<a href="c.html">c</a>' in b
    assert '<a href="c2.html">c2</a>' in b
    assert result.stats["webspider/mirror/fixed_up_count"] == 2  # / and /b


@deferred_f_from_coro_f
async def test_links_to_a_known_404_are_written_absolute_without_a_fix_up(
    tmp_path, server
):
    # Breadth-first, one at a time: / (linking /gone before the rest) is
    # written before /gone's 404, the other pages after it. Every page links
    # /gone, and all end with the same absolute link to it; only / waited
    # for the fix-up (a site whose every page links one 404 was rewritten
    # whole at its end).
    server.add("/", html('<a href="/gone#top">g</a> <a href="/d/a.html">a</a>'))
    server.add("/d/a.html", html('<a href="../gone">g</a> <a href="b.html">b</a>'))
    server.add("/d/b.html", html('<a href="/gone">g</a> <a href="/c.html">c</a>'))
    server.add("/c.html", html('<a href="gone#x">g</a> <a href="d/b.html">b</a>'))
    server.add("/gone", html("nope"), status=404)
    result = await crawl(
        tmp_path, start_urls=server.url("/"), settings={"CONCURRENT_REQUESTS": 1}
    )
    served = server.requested_pages()
    assert served.index("/gone") < served.index("/d/a.html")  # as said above
    root = result.output / "mirror" / host(server)
    gone = server.url("/gone")
    files = {
        "index.html": f'<a href="{gone}#top">g</a> <a href="d/a.html">a</a>',
        "d/a.html": f'<a href="{gone}">g</a> <a href="b.html">b</a>',
        "d/b.html": f'<a href="{gone}">g</a> <a href="../c.html">c</a>',
        "c.html": f'<a href="{gone}#x">g</a> <a href="d/b.html">b</a>',
    }
    for name, links in files.items():
        assert links in (root / name).read_text(), name
    assert result.stats["webspider/mirror/fixed_up_count"] == 1  # / alone


@deferred_f_from_coro_f
async def test_a_404_the_crawl_asks_again_for_waits_for_the_fix_up(tmp_path, server):
    # RETRY_HTTP_CODES names 404 (a flaky server): /gone's first 404 is not
    # its last answer, so no link to it is written absolute before the
    # retries are spent; the fix-up makes them all absolute at the end.
    server.add("/", html('<a href="/gone">g</a> <a href="/a.html">a</a>'))
    server.add("/a.html", html('<a href="gone">g</a> <a href="/b.html">b</a>'))
    server.add("/b.html", html('<a href="/gone">g</a>'))
    server.add("/gone", html("nope"), status=404)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={
            "CONCURRENT_REQUESTS": 1,
            "RETRY_TIMES": 2,
            "RETRY_HTTP_CODES": [404, 503],
        },
    )
    served = server.requested_pages()
    assert served.count("/gone") == 3  # asked, then RETRY_TIMES again
    assert served.index("/gone") < served.index("/b.html")
    root = result.output / "mirror" / host(server)
    for name in ("index.html", "a.html", "b.html"):
        assert f'href="{server.url("/gone")}"' in (root / name).read_text(), name
    assert result.stats["webspider/mirror/fixed_up_count"] == 3


@deferred_f_from_coro_f
async def test_keep_originals_and_no_conversion(tmp_path, server):
    body = html('<a href="/a">a</a>')
    server.add("/", body)
    server.add("/a", html("a"))
    result = await crawl(tmp_path, start_urls=server.url("/"), keep_originals="1")
    root = result.output / "mirror" / host(server)
    assert (root / "index.html%~orig").read_text() == body
    assert (root / "index.html").read_text() != body
    assert not (root / "a.html%~orig").exists()  # nothing converted: no copy

    result = await crawl(
        tmp_path / "plain", start_urls=server.url("/"), convert_links="0"
    )
    assert (result.output / "mirror" / host(server) / "index.html").read_text() == body


@deferred_f_from_coro_f
async def test_non_utf8_page_bytes_kept(tmp_path, server):
    body = (
        '<html><head><meta charset="windows-1252"></head>'
        '<body>Caf\xe9 \u2019 <a href="/a">\xe9</a></body></html>'
    )
    raw = body.encode("cp1252")
    server.add("/", Page(raw, content_type="text/html; charset=windows-1252"))
    server.add("/a", html("a"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    written = (result.output / "mirror" / host(server) / "index.html").read_bytes()
    assert written == raw.replace(b'href="/a"', b'href="a.html"')


@deferred_f_from_coro_f
async def test_redirect_target_is_linked(tmp_path, server):
    server.add("/", html('<a href="/old">old</a>'))
    server.add("/old", Page(b"", status=301, headers=[("Location", "/new")]))
    server.add("/new", html("new"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert mirror_files(result) == [
        f"{host(server)}/index.html",
        f"{host(server)}/new.html",
    ]
    index = (result.output / "mirror" / host(server) / "index.html").read_text()
    assert '<a href="new.html">old</a>' in index  # fixed up through the alias


class NoindexSpider(WebSpider):
    def page_item(self, response, page):
        item = super().page_item(response, page)
        if response.url.endswith("/secret"):
            item.noindex = True  # what the page-directives middleware sets
        return item


@deferred_f_from_coro_f
async def test_noindex_pages_are_not_written(tmp_path, server):
    server.add("/", html('<a href="/secret">s</a>'))
    server.add("/secret", html("secret"))
    result = await crawl(tmp_path, NoindexSpider, start_urls=server.url("/"))
    assert mirror_files(result) == [f"{host(server)}/index.html"]
    assert result.by_url()[server.url("/secret")]["path"] is None
    assert result.stats["webspider/mirror/skipped_count/noindex"] == 1


@deferred_f_from_coro_f
async def test_errors_and_partial_downloads_are_not_written(
    tmp_path, server, http_client
):
    server.add(
        "/",
        html(
            '<a href="/gone">g</a> <a href="/partial">p</a> <a href="/status/500">e</a>'
        ),
    )
    server.add("/gone", html("nope"), status=404)
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert mirror_files(result) == [f"{host(server)}/index.html"]


@deferred_f_from_coro_f
async def test_large_bodies_written_in_a_thread(tmp_path, server):
    big = bytes(range(256)) * 8192  # 2 MiB
    padding = "<p>text</p>" * 200  # over the threshold: converted in the thread too
    server.add("/", html(f'<a href="/a">a</a>{padding}<a href="/big.bin">b</a>'))
    server.add("/a", html(f'<a href="/">home</a>{padding}'))
    server.add("/big.bin", Page(big, content_type="application/octet-stream"))
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={"WEBSPIDER_MIRROR_THREAD_SIZE": 1024},
    )
    root = result.output / "mirror" / host(server)
    assert (root / "big.bin").read_bytes() == big
    assert '<a href="index.html">home</a>' in (root / "a.html").read_text()
    assert '<a href="a.html">a</a>' in (root / "index.html").read_text()  # fixed up


@deferred_f_from_coro_f
async def test_mirror_off_stops_non_html_bodies(tmp_path, server):
    big = b"\0" * 500_000
    server.add(
        "/", html('<a href="/big.bin">b</a> <link rel=stylesheet href="/s.css">')
    )
    server.add("/big.bin", Page(big, content_type="application/octet-stream"))
    server.add("/s.css", Page(b"a{b:url(/bg.png)}", content_type="text/css"))
    server.add("/bg.png", Page(b"png", content_type="image/png"))
    result = await crawl(tmp_path, start_urls=server.url("/"), mirror="0")
    assert not (result.output / "mirror").exists()
    assert not (result.output / "changes.jsonl").exists()
    items = result.by_url()
    item = items[server.url("/big.bin")]
    assert item["status"] == 200
    assert item["content_type"] == "application/octet-stream"
    assert item["size"] == len(big)  # announced, not received
    assert item["content_hash"] == ""
    assert item["path"] is None
    # CSS bodies are still read: its url() was followed
    assert "/bg.png" in server.requested()
    assert items[server.url("/s.css")]["size"] == len(b"a{b:url(/bg.png)}")
    assert result.stats["webspider/skip_bodies/stopped_count"] == 2
    assert result.stats.get("downloader/response_bytes", 0) < len(big)


@deferred_f_from_coro_f
async def test_same_name_twins_share_a_file_and_others_are_kept(tmp_path, server):
    home = html(
        '<a href="/index.html">i</a> <a href="/x">x</a> <a href="/x.html">y</a>'
    )
    server.add("/", home)
    server.add("/index.html", home)  # the same page under two URLs
    server.add("/x", html("page x"))
    server.add("/x.html", html("another page"))  # wants x.html too
    result = await crawl(tmp_path, start_urls=server.url("/"))
    h = host(server)
    items = result.by_url()
    assert items[server.url("/")]["path"] == items[server.url("/index.html")]["path"]
    paths = {items[server.url(p)]["path"] for p in ("/x", "/x.html")}
    assert len(paths) == 2  # different pages: both kept
    assert f"{h}/x.html" in paths
    assert len(mirror_files(result)) == 3
    index = (result.output / "mirror" / h / "index.html").read_text()
    assert '<a href="/index.html">' not in index


@deferred_f_from_coro_f
async def test_html_without_content_type(tmp_path, server):
    # no Content-Type: Scrapy takes it for HTML from the body, and so do we
    server.add("/", Page(html('<a href="/a">a</a>'), content_type=None))
    server.add("/a", html("a"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    root = result.output / "mirror" / host(server)
    assert '<a href="a.html">a</a>' in (root / "index.html").read_text()


@pytest.mark.parametrize("export_noindex", ["0", "1"])
@deferred_f_from_coro_f
async def test_pages_marked_noindex_are_not_written(tmp_path, server, export_noindex):
    server.add("/", html('<a href="/secret">s</a>'))
    server.add("/secret", html("s", head='<meta name="robots" content="noindex">'))
    result = await crawl(
        tmp_path, start_urls=server.url("/"), export_noindex=export_noindex
    )
    assert mirror_files(result) == [f"{host(server)}/index.html"]
