"""robots.txt as RFC 9309 says, checked against what the test server saw."""

from __future__ import annotations

import logging

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, TestServer, html

pytestmark = pytest.mark.e2e

ROBOTS_SKIP = "webspider/skipped/url_count/robots"
UNREACHABLE_SKIP = "webspider/skipped/url_count/robots_unreachable"
#: retry an unreachable robots.txt once, quickly
#: timers may fire a little early, and the clock is read a little late
TOLERANCE = 0.05
FAST_RETRY = {
    "WEBSPIDER_ROBOTSTXT_RETRY_TIMES": 1,
    "WEBSPIDER_ROBOTSTXT_RETRY_DELAY": 0.1,
}


def starts(server: TestServer, path_prefix: str) -> list[float]:
    return [r.time for r in server.log if r.path.startswith(path_prefix)]


def robots(text: str | bytes, status: int = 200, **kwargs: object) -> Page:
    return Page(text, status=status, content_type="text/plain", **kwargs)  # type: ignore[arg-type]


def site(server: TestServer) -> None:
    server.add("/", html('<a href="/public">p</a> <a href="/private/x">x</a>'))
    server.add("/public", html("public"))
    server.add("/private/x", html("private"))


@pytest.mark.parametrize(
    ("answer", "pages"),
    [
        (robots("User-agent: *\nDisallow: /private\n"), ["/", "/public"]),
        (robots("", status=404), ["/", "/public", "/private/x"]),
        (robots("", status=403), ["/", "/public", "/private/x"]),
        (robots("", status=401), ["/", "/public", "/private/x"]),
    ],
    ids=["200", "404", "403", "401"],
)
@deferred_f_from_coro_f
async def test_robots_answers(tmp_path, server, answer, pages):
    site(server)
    server.add("/robots.txt", answer)
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert server.requested()[0] == "/robots.txt"
    assert server.requested().count("/robots.txt") == 1
    assert sorted(server.requested_pages()) == sorted(pages)
    assert result.stats.get(ROBOTS_SKIP, 0) == 3 - len(pages)


@pytest.mark.parametrize("status", [500, 503, 429])
@deferred_f_from_coro_f
async def test_unreachable_robots_means_nothing_is_crawled(tmp_path, server, status):
    site(server)
    server.add("/robots.txt", robots("User-agent: *\nAllow: /\n", status=status))
    result = await crawl(tmp_path, settings=FAST_RETRY, start_urls=server.url("/"))
    # tried, retried once, then the origin was given up — never crawled
    assert server.requested() == ["/robots.txt", "/robots.txt"]
    assert result.stats[UNREACHABLE_SKIP] == 1
    assert result.stats["webspider/robotstxt/unreachable_origin_count"] == 1
    assert result.items == []


@deferred_f_from_coro_f
async def test_requests_wait_while_robots_is_retried(tmp_path, server):
    """A 503 then a 200: the pages wait for the rules, then obey them."""
    site(server)
    answers = [
        robots("", status=503),
        robots("User-agent: *\nDisallow: /private\n"),
    ]
    server.add(
        "/robots.txt", lambda seen: answers.pop(0) if len(answers) > 1 else answers[0]
    )
    await crawl(tmp_path, settings=FAST_RETRY, start_urls=server.url("/"))
    assert server.requested() == ["/robots.txt", "/robots.txt", "/", "/public"]


@pytest.mark.parametrize("failure", ["drop", "hang"])
@deferred_f_from_coro_f
async def test_robots_network_errors(tmp_path, server, failure, http_client):
    """The connection closes without an answer, or the answer never comes —
    for robots.txt only: the pages would answer, but are never asked for."""
    site(server)
    if failure == "drop":
        server.add("/robots.txt", lambda seen: "/drop")  # type: ignore[arg-type,return-value]
    else:
        server.add("/robots.txt", robots("User-agent: *\n", delay=3))
    result = await crawl(
        tmp_path,
        settings={**FAST_RETRY, "DOWNLOAD_TIMEOUT": 0.5},
        start_urls=server.url("/"),
    )
    assert server.requested() == ["/robots.txt", "/robots.txt"]
    assert result.stats[UNREACHABLE_SKIP] == 1


@deferred_f_from_coro_f
async def test_connection_refused(tmp_path, http_client):
    with TestServer(name="site.test") as closed:
        url = closed.url("/")
    # the port is closed now: connecting is refused
    result = await crawl(tmp_path, settings=FAST_RETRY, start_urls=url)
    assert result.stats[UNREACHABLE_SKIP] == 1
    # only the two robots.txt attempts went to the downloader
    assert result.stats["downloader/request_count"] == 2


@deferred_f_from_coro_f
async def test_redirect_to_another_host(tmp_path, server, other_server):
    """Rules found after a cross-host redirect apply to the original origin;
    the other host is not crawled (scope), only its robots copy is read."""
    site(server)
    server.add(
        "/robots.txt", Page(b"", status=301, headers=[("Location", server.url("/hop"))])
    )
    server.add(
        "/hop",
        Page(
            b"",
            status=302,
            headers=[("Location", other_server.url("/site-robots.txt"))],
        ),
    )
    other_server.add("/site-robots.txt", robots("User-agent: *\nDisallow: /private\n"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert server.requested() == ["/robots.txt", "/hop", "/", "/public"]
    assert other_server.requested() == ["/site-robots.txt"]
    assert result.stats[ROBOTS_SKIP] == 1


@deferred_f_from_coro_f
async def test_too_many_redirects_is_unreachable(tmp_path, server):
    site(server)
    for i in range(7):
        server.add(
            "/robots.txt" if i == 0 else f"/r{i}",
            Page(b"", status=302, headers=[("Location", f"/r{i + 1}")]),
        )
    result = await crawl(
        tmp_path,
        settings={"WEBSPIDER_ROBOTSTXT_RETRY_TIMES": 0},
        start_urls=server.url("/"),
    )
    # the robots.txt request and five redirects, then it gave up
    assert server.requested() == ["/robots.txt", "/r1", "/r2", "/r3", "/r4", "/r5"]
    assert result.stats[UNREACHABLE_SKIP] == 1


def big_robots(size: int) -> bytes:
    head = b"User-agent: *\nDisallow: /start\n"
    tail = b"Disallow: /end\n"
    filler = b"# " + b"x" * 97 + b"\n"  # 100 bytes a line
    lines = (size - len(head) - len(tail)) // len(filler)
    return head + filler * lines + tail


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (505 * 1024, (["/", "/ok"], False)),  # over 500 KiB, all of it obeyed
        (700 * 1024, (["/", "/end", "/ok"], True)),  # the end is past the cap
    ],
)
@deferred_f_from_coro_f
async def test_large_robots(tmp_path, server, caplog, size, expected):
    pages, truncated = expected
    server.add(
        "/", html('<a href="/start">s</a><a href="/end">e</a><a href="/ok">o</a>')
    )
    for path in ("/start", "/end", "/ok"):
        server.add(path, html(path))
    body = big_robots(size)
    assert len(body) > 500 * 1024
    server.add("/robots.txt", robots(body))
    with caplog.at_level(logging.WARNING):
        result = await crawl(tmp_path, start_urls=server.url("/"))
    assert sorted(server.requested_pages()) == pages
    assert ("only the first 524288 are obeyed" in caplog.text) is truncated
    assert result.stats.get("webspider/robotstxt/truncated_count", 0) == truncated


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /private\n",
        b"User-agent: *\r\nDisallow: /private\r\n",
        b"User-agent: *\rDisallow: /private\r",
        b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /private",
    ],
    ids=["bom", "crlf", "cr", "bom-crlf-no-final-newline"],
)
@deferred_f_from_coro_f
async def test_bom_and_line_endings(tmp_path, server, body):
    site(server)
    server.add("/robots.txt", robots(body))
    await crawl(tmp_path, start_urls=server.url("/"))
    assert sorted(server.requested_pages()) == ["/", "/public"]


@deferred_f_from_coro_f
async def test_group_by_product_token(tmp_path, server):
    server.add("/", html('<a href="/a">a</a><a href="/b">b</a>'))
    server.add(
        "/robots.txt",
        robots(
            "User-agent: *\nDisallow: /a\n\n"
            "User-agent: WebSpider\nDisallow: /b\n\n"
            "User-agent: otherbot\nDisallow: /\n"
        ),
    )
    await crawl(tmp_path, start_urls=server.url("/"))
    assert sorted(server.requested_pages()) == ["/", "/a"]


@deferred_f_from_coro_f
async def test_robots_off_warns_once(tmp_path, server, caplog):
    site(server)
    server.add("/robots.txt", robots("User-agent: *\nDisallow: /\n"))
    with caplog.at_level(logging.WARNING):
        await crawl(tmp_path, start_urls=server.url("/"), robots="0")
    assert "/robots.txt" not in server.requested()
    assert sorted(server.requested_pages()) == ["/", "/private/x", "/public"]
    assert caplog.text.count("robots.txt is NOT obeyed") == 1


@deferred_f_from_coro_f
async def test_one_fetch_per_origin(tmp_path, server, www_server):
    """Each origin's robots.txt once; the rules of one do not leak to another."""
    server.add("/", html(f'<a href="{www_server.url("/x")}">x</a><a href="/x">x</a>'))
    server.add("/x", html("x"))
    www_server.add("/x", html("x"))
    server.add("/robots.txt", robots("User-agent: *\nDisallow: /x\n"))
    www_server.add("/robots.txt", robots("User-agent: *\nDisallow: /y\n"))
    await crawl(tmp_path, start_urls=server.url("/"), scope="domain")
    assert server.requested() == ["/robots.txt", "/"]
    assert www_server.requested() == ["/robots.txt", "/x"]


def sitemap(*urls: str) -> Page:
    locs = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
    )
    return Page(body, content_type="application/xml")


@deferred_f_from_coro_f
async def test_sitemaps_seed_the_crawl_within_scope(tmp_path, server, other_server):
    server.add("/", html("home"))
    for path in ("/docs/a", "/docs/b", "/docs/private", "/blog/x"):
        server.add(path, html(path))
    index = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{server.url('/sitemap-docs.xml')}</loc></sitemap>"
        "</sitemapindex>"
    )
    server.add(
        "/robots.txt",
        robots(
            "User-agent: *\nDisallow: /docs/private\n"
            f"Sitemap: {server.url('/sitemap.xml')}\n"
        ),
    )
    server.add("/sitemap.xml", Page(index, content_type="application/xml"))
    server.add(
        "/sitemap-docs.xml",
        sitemap(
            server.url("/docs/a"),
            server.url("/docs/b"),
            server.url("/docs/private"),  # robots.txt says no
            server.url("/blog/x"),  # outside the include list
            other_server.url("/docs/a"),  # out of scope
        ),
    )
    result = await crawl(
        tmp_path,
        start_urls=server.url("/docs/"),
        include=server.url("/docs/"),
        sitemaps="1",
    )
    assert sorted(server.requested()) == [
        "/docs/",
        "/docs/a",
        "/docs/b",
        "/robots.txt",
        "/sitemap-docs.xml",
        "/sitemap.xml",
    ]
    assert other_server.requested() == []
    assert sorted(i["url"] for i in result.items) == [
        server.url("/docs/a"),
        server.url("/docs/b"),
    ]
    assert result.stats["webspider/sitemaps/url_count"] == 5


@deferred_f_from_coro_f
async def test_rules_are_fetched_again_after_the_cache_ttl(tmp_path, server):
    for i in range(4):
        link = f'<a href="/c{i + 1}">next</a>' if i < 3 else "end"
        server.add(f"/c{i}", Page(html(link), delay=0.4))
    answers = ["User-agent: *\nDisallow: /nothing\n", "User-agent: *\nDisallow: /c3\n"]
    server.add(
        "/robots.txt",
        lambda seen: robots(answers.pop(0) if len(answers) > 1 else answers[0]),
    )
    await crawl(
        tmp_path,
        settings={"WEBSPIDER_ROBOTSTXT_CACHE_TTL": 1},
        start_urls=server.url("/c0"),
    )
    # c0, c1, c2 take 1.2 s: the rules read again before c3 forbid it
    requested = server.requested()
    assert requested[:2] == ["/robots.txt", "/c0"]
    assert requested.count("/robots.txt") == 2
    assert sorted(server.requested_pages()) == ["/c0", "/c1", "/c2"]


@deferred_f_from_coro_f
async def test_waiting_for_robots_does_not_block_other_hosts(
    tmp_path, server, other_server
):
    """With CONCURRENT_REQUESTS=2, twenty requests waiting for site.test's
    slow robots.txt would fill the downloader; they wait aside, and
    other.test's pages (of the same depth, see the level barrier in
    docs/depth-and-rounds.md) go on meanwhile."""
    server.add("/robots.txt", robots("User-agent: *\n", delay=1))
    links = [server.url(f"/x{i}") for i in range(20)]
    links += [other_server.url(f"/o{i}") for i in range(10)]
    other_server.add("/", html("".join(f'<a href="{u}">x</a>' for u in links)))
    await crawl(
        tmp_path,
        settings={
            "CONCURRENT_REQUESTS": 2,
            "DOWNLOAD_SLOTS": {"other.test": {"delay": 0.05, "jitter": 0}},
        },
        start_urls=other_server.url("/"),
        scope="all",
    )
    robots_start = server.log[0].time
    assert server.log[0].path == "/robots.txt"
    during = [t for t in starts(other_server, "/o") if t < robots_start + 1]
    assert len(during) == 10
    assert len(server.requested_pages()) == 20
    assert min(r.time for r in server.log[1:]) >= robots_start + 1 - TOLERANCE


@deferred_f_from_coro_f
async def test_a_round_ends_only_after_its_waiting_requests(
    tmp_path, server, other_server
):
    """Requests waiting for a robots.txt are still the round's: the next
    round (of deferred links) starts only after they went out."""
    server.add("/robots.txt", robots("User-agent: *\n", delay=1))
    server.add("/x", html("x"))
    other_server.add("/", html(f'<a href="{server.url("/x")}">x</a><a href="/a">a</a>'))
    other_server.add("/a", html('<a href="/b">b</a>'))  # /b: depth 2, deferred
    other_server.add("/b", html("b"))
    result = await crawl(
        tmp_path, start_urls=other_server.url("/"), scope="all", max_depth="1"
    )
    x_time = next(r.time for r in server.log if r.path == "/x")
    b_time = next(r.time for r in other_server.log if r.path == "/b")
    assert b_time > x_time
    assert result.stats["webspider/depth/round_completed_count"] == 2
