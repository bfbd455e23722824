"""End-to-end: updating an existing mirror with conditional requests."""

import hashlib

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html
from webspider.mirror.store import MirrorStore

pytestmark = pytest.mark.e2e

LAST_MODIFIED = "Sat, 01 Jan 2022 00:00:00 GMT"


def etag_page(body, etag, content_type="text/html; charset=utf-8"):
    """A route that answers 304 when the client already has ``etag``."""

    def route(seen):
        if seen.headers.get("If-None-Match") == etag:
            return Page(b"", status=304, content_type=None, headers=[("ETag", etag)])
        return Page(body, content_type=content_type, headers=[("ETag", etag)])

    return route


def dated_page(body, content_type):
    def route(seen):
        if seen.headers.get("If-Modified-Since") == LAST_MODIFIED:
            return Page(b"", status=304, content_type=None)
        return Page(
            body, content_type=content_type, headers=[("Last-Modified", LAST_MODIFIED)]
        )

    return route


def snapshot(root):
    return {
        str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def changes(result):
    return {line["url"]: line["change"] for line in result.exported("changes.jsonl")}


@deferred_f_from_coro_f
async def test_update_crawl(tmp_path, server, http_client):
    index = html(
        '<a href="/a">a</a> <img src="/img.png"> <link rel=stylesheet href="/s.css">'
    )
    server.add("/", etag_page(index, '"v1"'))
    server.add("/a", etag_page(html('<a href="/deep">deep</a>'), '"a1"'))
    server.add("/deep", html("no validators"))
    server.add("/img.png", dated_page(b"png", "image/png"))
    server.add("/s.css", etag_page(b"a{b:url(/bg.png)}", '"c1"', "text/css"))
    server.add("/bg.png", Page(b"bg", content_type="image/png"))
    first = await crawl(tmp_path, start_urls=server.url("/"))
    assert set(changes(first).values()) == {"new"}
    root = first.output / "mirror"
    before = snapshot(root)
    assert len(before) == 6

    server.clear()
    second = await crawl(tmp_path, start_urls=server.url("/"))
    seen = {r.path: r.headers for r in server.log}
    assert seen["/"]["If-None-Match"] == '"v1"'
    assert seen["/a"]["If-None-Match"] == '"a1"'
    assert seen["/img.png"]["If-Modified-Since"] == LAST_MODIFIED
    # reached only through pages answered 304: their links were followed
    assert "/deep" in seen and "/bg.png" in seen
    assert changes(second) == {url: "unchanged" for url in changes(first)}
    assert snapshot(root) == before  # nothing rewritten
    items = second.by_url()
    assert items[server.url("/")]["status"] == 304
    assert items[server.url("/")]["path"] == f"site.test_{server.port}/index.html"
    original = hashlib.sha256(index.encode()).hexdigest()
    assert items[server.url("/")]["content_hash"] == original
    assert second.stats["webspider/mirror/not_modified_count"] == 4
    assert "webspider/mirror/written_count" not in second.stats

    # the site changes: /a is edited (and drops /deep), /new appears
    server.add("/a", etag_page(html('<a href="/new">new</a>'), '"a2"'))
    server.add("/new", html("new"))
    third = await crawl(tmp_path, start_urls=server.url("/"))
    assert changes(third) == {
        server.url("/"): "unchanged",
        server.url("/a"): "changed",
        server.url("/new"): "new",
        server.url("/img.png"): "unchanged",
        server.url("/s.css"): "unchanged",
        server.url("/bg.png"): "unchanged",
        server.url("/deep"): "gone",
    }
    after = snapshot(root)
    rewritten = {p for p in after if after[p] != before.get(p)}
    h = f"site.test_{server.port}"
    assert rewritten == {f"{h}/a.html", f"{h}/new.html"}
    assert (root / h / "deep.html").exists()  # gone from the site, kept in the mirror
    assert '<a href="new.html">new</a>' in (root / h / "a.html").read_text()


@deferred_f_from_coro_f
async def test_interrupted_crawl_reports_nothing_gone(tmp_path, server):
    server.add("/", html('<a href="/a">a</a> <a href="/b">b</a>'))
    server.add("/a", html("a"))
    server.add("/b", html("b"))
    await crawl(tmp_path, start_urls=server.url("/"))
    result = await crawl(
        tmp_path, start_urls=server.url("/"), settings={"CLOSESPIDER_ITEMCOUNT": 1}
    )
    assert "gone" not in set(changes(result).values())


@deferred_f_from_coro_f
async def test_fix_up_when_an_interrupted_crawl_resumes(tmp_path, server, monkeypatch):
    server.add("/", html('<a href="/b">b</a>'))
    server.add("/b", html("b"))
    # the first crawl dies before its end-of-crawl fix-up
    monkeypatch.setattr(MirrorStore, "fix_up_pages", lambda self, commit=None: 0)
    first = await crawl(tmp_path, start_urls=server.url("/"))
    index = first.output / "mirror" / f"site.test_{server.port}" / "index.html"
    # written before /b was: the link leads where a file named after /b was
    # expected, but /b, a page, became b.html
    assert '<a href="b">b</a>' in index.read_text()
    monkeypatch.undo()
    # the next crawl (here fetching nothing new) imports what the first left
    # in mirror-state.jsonl, and fixes the links when it ends
    await crawl(tmp_path, start_urls=server.url("/status/500"))
    assert '<a href="b.html">b</a>' in index.read_text()


@deferred_f_from_coro_f
async def test_resumed_jobdir_crawl_keeps_what_it_fetched_before(tmp_path, server):
    server.add("/", html('<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>'))
    for name in "abc":
        server.add(f"/{name}", html(name))
    settings = {"JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS": 1}
    await crawl(tmp_path, start_urls=server.url("/"))  # a mirror to update
    server.clear()
    first = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={**settings, "CLOSESPIDER_ITEMCOUNT": 2},
    )
    assert "gone" not in set(changes(first).values())  # interrupted: unknown
    before = set(server.requested_pages())
    server.clear()
    resumed = await crawl(tmp_path, start_urls=server.url("/"), settings=settings)
    after = set(server.requested_pages())
    # the resumed crawl fetched only the rest; what the interrupted part
    # fetched is not "gone", and changes.jsonl covers both parts
    assert after and not before & after
    assert before | after == {"/", "/a", "/b", "/c"}
    assert changes(resumed) == {
        server.url(p): "unchanged" for p in ("/", "/a", "/b", "/c")
    }


@deferred_f_from_coro_f
async def test_update_reaches_urls_that_share_a_file(tmp_path, server):
    home = html('<a href="/index.html">i</a>')
    server.add("/", dated_page(home, "text/html"))
    server.add("/index.html", dated_page(home, "text/html"))  # the same page
    await crawl(tmp_path, start_urls=server.url("/"))
    server.clear()
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert server.requested_pages() == ["/", "/index.html"]
    assert set(changes(result).values()) == {"unchanged"}


@deferred_f_from_coro_f
async def test_conditional_headers_do_not_follow_a_redirect(tmp_path, server):
    # every file of a static site often has the same Last-Modified
    server.add("/", html('<a href="/old">old</a>'))
    server.add("/old", dated_page(html("old"), "text/html"))
    await crawl(tmp_path, start_urls=server.url("/"))
    server.add("/old", Page(b"", status=301, headers=[("Location", "/new")]))
    server.add("/new", dated_page(html("new"), "text/html"))
    server.clear()
    result = await crawl(tmp_path, start_urls=server.url("/"))
    seen = {r.path: r.headers for r in server.log}
    assert seen["/old"]["If-Modified-Since"] == LAST_MODIFIED
    assert "If-Modified-Since" not in seen["/new"]
    assert changes(result)[server.url("/new")] == "new"
    assert changes(result)[server.url("/old")] == "gone"


@deferred_f_from_coro_f
async def test_twins_share_their_fix_up(tmp_path, server):
    # "/" and "/index.html" are one page in one file. Its stylesheet is not
    # where the link expects it ("?1" is "?1=" in canonical form), so the
    # fix-up repoints the link in that file: both URLs must know what the
    # new value stands for, or an update crawl, reading the stored page back,
    # takes "s.css@1" for a link.
    home = html(
        '<a href="/index.html">i</a>', head='<link rel=stylesheet href="s.css?1">'
    )
    server.add("/", etag_page(home, '"h"'))
    server.add("/index.html", etag_page(home, '"h"'))
    server.add("/s.css?1", etag_page(b"p{color:red}", '"c"', "text/css"))
    first = await crawl(tmp_path, start_urls=server.url("/"))
    stored = first.output / "mirror" / f"site.test_{server.port}" / "index.html"
    assert 'href="s.css@1"' in stored.read_text()
    server.clear()
    second = await crawl(tmp_path, start_urls=server.url("/"))
    assert sorted(server.requested()) == ["/", "/index.html", "/robots.txt", "/s.css?1"]
    assert not (second.output / "broken-links.jsonl").read_text()
    assert set(changes(second).values()) == {"unchanged"}
