"""End-to-end: a user's own decisions, through the spider hook and the signals.

As a user would: a handler (or an ``adjust_directives`` override) that sets
nofollow on pages whose title contains a word really stops those pages'
links — asserted from what the server saw requested."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, TestServer, html
from webspider import signals
from webspider.page.response import parsed_page
from webspider.spiders.webspider import WebSpider

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent


def titled_site(server) -> None:
    server.add(
        "/",
        html(
            '<a href="/secret">s</a><a href="/public">p</a><a href="/closed">c</a>',
            title="Home",
        ),
    )
    server.add("/secret", html('<a href="/bomb-secret">x</a>', title="Secret plans"))
    server.add("/public", html('<a href="/leaf">x</a>', title="Public"))
    server.add("/leaf", html("leaf", title="Leaf"))
    server.add(
        "/closed",
        html(
            '<a href="/opened">x</a><a href="/rel" rel="nofollow">r</a>',
            title="Closed",
            head='<meta name="robots" content="noindex, nofollow">',
        ),
    )
    server.add("/opened", html("opened", title="Opened"))
    server.add("/rel", html("rel", title="Rel"))


def listening_spider(**handlers):
    """A WebSpider whose from_crawler connects ``handlers`` (signal name →
    function), as a user's program connects to crawler.signals."""

    class Listening(WebSpider):
        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            for name, handler in handlers.items():
                crawler.signals.connect(handler, signal=getattr(signals, name))
            return spider

    return Listening


@deferred_f_from_coro_f
async def test_page_found_handler_can_set_nofollow_and_loosen(tmp_path, server):
    titled_site(server)
    seen: list[tuple[str, int, bool, bool]] = []

    def page_found(response, depth, directives):
        seen.append((response.url, depth, directives.noindex, directives.nofollow))
        page = parsed_page(response)  # the one parse, not a second one
        title = page.title if page is not None else ""
        if "Secret" in title:
            directives.nofollow = True
        if title == "Closed":  # loosen what the page said
            directives.nofollow = directives.noindex = False

    spider = listening_spider(page_found=page_found)
    result = await crawl(tmp_path, spider, start_urls=server.url("/"))

    requested = server.requested_pages()
    assert "/bomb-secret" not in requested
    assert "/leaf" in requested
    assert "/opened" in requested  # loosened page: its links are followed…
    assert "/rel" not in requested  # …but not its rel=nofollow link
    assert server.url("/closed") in {row["url"] for row in result.exported()}
    # the handler saw depth and what the page itself said
    by_url = {url: (depth, ni, nf) for url, depth, ni, nf in seen}
    assert by_url[server.url("/")] == (0, False, False)
    assert by_url[server.url("/secret")] == (1, False, False)
    assert by_url[server.url("/closed")] == (1, True, True)
    assert by_url[server.url("/leaf")] == (2, False, False)
    assert result.stats["webspider/directives/nofollow_count/user"] == 1
    assert result.stats["webspider/skipped/url_count/nofollow"] == 1


@deferred_f_from_coro_f
async def test_adjust_directives_override(tmp_path, server):
    titled_site(server)

    class MySpider(WebSpider):
        def adjust_directives(self, response, directives):
            page = parsed_page(response)
            title = page.title if page is not None else ""
            if "secret" in (title or "").lower():
                directives.nofollow = True
                directives.noindex = True
            if title == "Public":
                directives.dont_follow(response.urljoin("/leaf"))
            if title == "Closed":
                directives.nofollow = False  # still noindex
                directives.follow(response.urljoin("/rel"))

    result = await crawl(tmp_path, MySpider, start_urls=server.url("/"))

    requested = server.requested_pages()
    assert "/bomb-secret" not in requested
    assert "/leaf" not in requested
    assert "/opened" in requested
    assert "/rel" in requested
    exported = {row["url"] for row in result.exported()}
    assert server.url("/secret") not in exported
    assert server.url("/closed") not in exported
    assert server.url("/public") in exported
    assert result.stats["webspider/skipped/url_count/nofollow_link"] == 1


@deferred_f_from_coro_f
async def test_links_queued_and_page_complete(tmp_path, server):
    server.add(
        "/",
        html(
            '<a href="/a">a</a><a href="/remove-me">r</a><a href="/missing">m</a>'
            '<a href="/drop">d</a><a href="/nf" rel="nofollow">n</a>',
            title="Home",
        ),
    )
    server.add("/a", html('<a href="/">home</a><a href="/b">b</a>', title="A"))
    server.add("/b", html("b", title="B"))
    server.add("/remove-me", html("must not be requested"))
    events: list[tuple] = []

    def links_queued(url, depth, urls):
        events.append(("queued", url, depth, list(urls)))
        if server.url("/remove-me") in urls:
            urls.remove(server.url("/remove-me"))

    def page_complete(url, status, error):
        events.append(("complete", url, status, error))

    spider = listening_spider(links_queued=links_queued, page_complete=page_complete)
    result = await crawl(tmp_path, spider, start_urls=server.url("/"))

    requested = server.requested_pages()
    assert "/remove-me" not in requested
    assert "/nf" not in requested
    assert sorted(requested) == sorted(["/", "/a", "/b", "/missing", "/drop"])
    queued = {e[1]: e[2:] for e in events if e[0] == "queued"}
    home = server.url("/")
    assert queued[home][0] == 0
    assert sorted(queued[home][1]) == sorted(
        server.url(p) for p in ("/a", "/remove-me", "/missing", "/drop")
    )
    # already-seen links are not queued again
    assert queued[server.url("/a")] == (1, [server.url("/b")])
    assert queued[server.url("/b")] == (2, [])
    complete = {e[1]: e[2:] for e in events if e[0] == "complete"}
    assert complete[home] == (200, None)
    assert complete[server.url("/b")] == (200, None)
    assert complete[server.url("/missing")] == (404, None)
    status, error = complete[server.url("/drop")]
    assert status is None
    assert error
    # for each page: links queued, then complete
    for url in (home, server.url("/a")):
        order = [e[0] for e in events if e[1] == url]
        assert order == ["queued", "complete"]
    assert result.stats["webspider/skipped/url_count/nofollow_link"] == 2


def test_the_documented_example_runs(tmp_path):
    """docs/page-directives.md's example, run as a user would (a subprocess:
    CrawlerProcess owns its reactor)."""
    text = (ROOT / "docs" / "page-directives.md").read_text("utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert code is not None
    script = tmp_path / "example.py"
    script.write_text(code.group(1), "utf-8")
    with TestServer() as server:
        server.add(
            "/",
            html('<a href="/archive">a</a><a href="/news">n</a>', title="Home"),
        )
        server.add("/archive", html('<a href="/bomb">old</a>', title="Archive 2019"))
        server.add("/news", Page(html('<a href="/gone">x</a>', title="News")))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, str(script), server.url("/")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        requested = server.requested_pages()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "/bomb" not in requested
    assert "/gone" in requested
    assert f"404 {server.url('/gone')}" in proc.stdout
    assert (tmp_path / "out" / "pages.jsonl").exists()


class RecordingSpider(WebSpider):
    """Records every page its directives hook is asked about."""

    adjusted: list[str]

    def adjust_directives(self, response, directives):
        type(self).adjusted.append(response.url)


@deferred_f_from_coro_f
async def test_link_checks_of_outside_urls_are_not_pages_of_the_crawl(
    tmp_path, server, other_server
):
    other_server.add("/up", html("outside", title="Outside"))
    server.add("/", html(f'<a href="{other_server.url("/up")}">out</a>', title="Home"))
    RecordingSpider.adjusted = []
    await crawl(
        tmp_path,
        spidercls=RecordingSpider,
        start_urls=server.url("/"),
        check_external="1",
    )
    assert "/up" in other_server.requested("HEAD")  # it was checked…
    assert RecordingSpider.adjusted == [server.url("/")]  # …but is no page of ours
