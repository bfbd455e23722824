"""End-to-end: what a download meets, with each HTTP client
(``WEBSPIDER_HTTP_CLIENT``, the ``http_client`` fixture): hostile answers
give the same pages and the same broken-link codes; connections are kept
alive, re-opened when the server closed them, sent again once when the
server dropped a kept-alive one, and bound to ``DOWNLOAD_BIND_ADDRESS``.
Asserted on what the servers saw (requests, connections, client address).
"""

from __future__ import annotations

import socket
import time

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, TestServer, html

pytestmark = pytest.mark.e2e

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
#: a head of 300 headers of 1 KB: Twisted has no bound, the lean client 256 KiB
BIG_HEAD = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 1000) for i in range(300))

#: path → (raw answer, its code in broken-links.jsonl, or None: a page)
HOSTILE: dict[str, tuple[bytes, str | None]] = {
    "/no-colon": (
        OK_HEAD
        + b"this line has no colon\r\nContent-Length: 14\r\n\r\n<p>a page</p>\n",
        None,
    ),
    "/folded": (
        OK_HEAD + b"X-Folded: a\r\n b\r\nContent-Length: 14\r\n\r\n<p>a page</p>\n",
        None,
    ),
    "/chunked": (
        OK_HEAD
        + b"Transfer-Encoding: chunked\r\n\r\n5\r\n<p>a \r\n9\r\npage</p>\n\r\n0\r\n\r\n",
        None,
    ),
    "/to-the-close": (
        b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<p>x</p>",
        None,
    ),
    "/interim": (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        + OK_HEAD
        + b"Content-Length: 8\r\n\r\n<p>x</p>",
        None,
    ),
    "/bare-lf": (b"HTTP/1.1 200 OK\nContent-Length: 8\n\n<p>x</p>", None),
    "/garbage": (b"SPAM SPAM SPAM\r\n\r\n", "connection_lost"),
    "/bad-length": (
        OK_HEAD + b"Content-Length: 12abc\r\n\r\n<p>x</p>",
        "connection_lost",
    ),
    "/two-lengths": (
        OK_HEAD + b"Content-Length: 8\r\nContent-Length: 9\r\n\r\n<p>x</p>",
        "connection_lost",
    ),
    "/gzip-coding": (
        OK_HEAD + b"Transfer-Encoding: gzip\r\n\r\n<p>x</p>",
        "connection_lost",
    ),
    "/cut-chunk": (
        OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n20\r\n<p>only part",
        "connection_lost",
    ),
    "/cut-length": (
        OK_HEAD + b"Content-Length: 100\r\n\r\n<p>x</p>",
        "connection_lost",
    ),
    "/long-line": (
        OK_HEAD + b"X-Long: " + b"a" * 20_000 + b"\r\n\r\n",
        "connection_lost",
    ),
    "/head-only": (OK_HEAD + b"X-Cut: ", "connection_lost"),
    "/nothing": (b"", "connection_lost"),
}


def add_hostile(server: TestServer) -> None:
    server.add("/", html("".join(f'<a href="{p}">x</a>' for p in HOSTILE)))
    for path, (raw, _) in HOSTILE.items():
        server.add(path, Page(raw=raw))


@deferred_f_from_coro_f
async def test_hostile_answers_come_out_alike(tmp_path, server, http_client):
    add_hostile(server)
    result = await crawl(tmp_path, start_urls=server.url("/"))
    broken = {r["url"]: r["error"] for r in result.exported("broken-links.jsonl")}
    pages = {r["url"]: r["status"] for r in result.exported()}
    for path, (_, code) in HOSTILE.items():
        if code is None:
            assert pages.get(server.url(path)) == 200, path
        else:
            assert broken.get(server.url(path)) == code, path
    assert {p for p in server.requested() if p in HOSTILE} == set(HOSTILE)


@deferred_f_from_coro_f
async def test_a_header_block_over_256_kib(tmp_path, server, http_client):
    """Twisted reads any header block (a line at most 16 KiB); the lean
    client stops at 256 KiB: the one difference in what they read."""
    server.add("/", html('<a href="/big-head">x</a>'))
    server.add("/big-head", Page(raw=OK_HEAD + BIG_HEAD + b"Content-Length: 0\r\n\r\n"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    broken = {r["url"]: r for r in result.exported("broken-links.jsonl")}
    if http_client == "twisted":
        assert server.url("/big-head") not in broken
    else:
        found = broken[server.url("/big-head")]
        assert found["error"] == "connection_lost"
        assert "header block over 262144 bytes" in found["detail"]


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@deferred_f_from_coro_f
async def test_failures_have_the_same_codes(tmp_path, server, http_client):
    """What the reports say of a failed download rests on the exception's
    type: each client raises Scrapy's."""
    refused = f"http://site.test:{closed_port()}/"
    links = [refused, "/delay/3", "/drop", "/partial", "/status/503"]
    server.add("/", html("".join(f'<a href="{u}">x</a>' for u in links)))
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        robots="0",
        settings={"DOWNLOAD_TIMEOUT": 0.5},
    )
    broken = {r["url"]: r["error"] for r in result.exported("broken-links.jsonl")}
    assert broken == {
        refused: "connection_refused",
        server.url("/delay/3"): "timeout",
        server.url("/drop"): "connection_lost",
        server.url("/partial"): "connection_lost",
        server.url("/status/503"): None,
    }


def chain(server: TestServer, n: int) -> None:
    for i in range(n):
        link = f'<a href="/p{i + 1}">next</a>' if i + 1 < n else "end"
        server.add(f"/p{i}", html(link, title=f"P{i}"))


@deferred_f_from_coro_f
async def test_connections_are_kept_alive_and_closed_at_the_end(
    tmp_path, server, http_client
):
    chain(server, 30)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/p0"),
        settings={"CONCURRENT_REQUESTS_PER_DOMAIN": 1},
    )
    assert len(result.items) == 30
    assert len(server.requested()) == 31  # robots.txt too
    assert server.accepts <= 2
    deadline = time.monotonic() + 5
    while server.open_connections and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.open_connections == 0


@deferred_f_from_coro_f
async def test_a_connection_the_server_closed_while_idle_is_not_reused(
    tmp_path, http_client
):
    with TestServer(name="site.test", idle_timeout=0.1) as server:
        chain(server, 4)
        result = await crawl(
            tmp_path,
            start_urls=server.url("/p0"),
            settings={"DOWNLOAD_DELAY": 0.4, "DOWNLOAD_DELAY_JITTER": 0},
        )
    assert len(result.items) == 4
    assert not result.exported("broken-links.jsonl")
    # each request after a pause came on a new connection
    assert server.accepts == len(server.requested()) == 5


@deferred_f_from_coro_f
async def test_a_dropped_kept_alive_connection_is_tried_once_more(
    tmp_path, server, http_client
):
    server.add("/", html('<a href="/drop">x</a>'))
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={"CONCURRENT_REQUESTS_PER_DOMAIN": 1},
    )
    broken = {r["url"]: r["error"] for r in result.exported("broken-links.jsonl")}
    assert broken == {server.url("/drop"): "connection_lost"}
    # on the connection kept from /, then on a new one (Twisted's pool does
    # the same); no more (RETRY_TIMES is 0 in the tests)
    assert server.requested().count("/drop") == 2


@deferred_f_from_coro_f
async def test_connections_come_from_the_bind_address(tmp_path, server, http_client):
    chain(server, 3)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/p0"),
        settings={"DOWNLOAD_BIND_ADDRESS": "127.0.0.2"},
    )
    assert len(result.items) == 3
    assert {seen.client for seen in server.log} == {"127.0.0.2"}


@deferred_f_from_coro_f
async def test_a_line_end_in_a_header_value_smuggles_no_header(
    tmp_path, server, http_client
):
    """A request header's value holding CR LF is sent as one line (Twisted's
    Headers make the line end a space; the lean client does the same), so
    no header of the server's reading is added by it."""
    server.add("/", html("<p>a page</p>"))
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={
            "DEFAULT_REQUEST_HEADERS": {"X-Note": "one\r\nX-Smuggled: yes\nX-Two: 2"}
        },
    )
    assert len(result.items) == 1
    seen = [r for r in server.log if r.path == "/"]
    assert seen
    for request in seen:
        names = {name.lower() for name in request.headers}
        assert "x-smuggled" not in names
        assert "x-two" not in names
        assert request.headers["X-Note"] == "one X-Smuggled: yes X-Two: 2"
