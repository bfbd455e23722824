"""Issue 15, finding 1: no request reaches a loopback, private or link-local
address that a page, a redirect or DNS leads to, except the start URLs' own.

Servers on other loopback addresses (Linux routes all of 127/8 to lo) stand
for a scrapyd on 127.0.0.2 and the like; they record every request, and
must see none. Every TCP connection the crawl opens is recorded too."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from twisted.internet import defer

import tests.support.crawl
from tests.support.cli import run_crawl
from tests.support.crawl import crawl
from tests.support.resolver import LoopbackTestResolver
from tests.support.server import Page, TestServer, html


@pytest.fixture
def start() -> Iterator[TestServer]:
    """The site being crawled, at http://127.0.0.1:<port>/."""
    with TestServer("127.0.0.1") as srv:
        yield srv


@pytest.fixture
def victim() -> Iterator[TestServer]:
    """Something on another loopback address, a private service."""
    with TestServer("127.0.0.2") as srv:
        srv.add("/", html("secret", title="Private"))
        yield srv


@pytest.fixture
def victim3() -> Iterator[TestServer]:
    with TestServer("127.0.0.3") as srv:
        srv.add("/", html("secret", title="Private too"))
        yield srv


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch, http_client: str) -> list[str]:
    """The address of every TCP connection the crawl opens, seen where both
    HTTP clients make theirs: the socket they connect (Twisted's TCP client
    and asyncio's make theirs with ``socket.socket``). Each test using it
    runs with both clients."""
    seen: list[str] = []

    class RecordingSocket(socket.socket):
        def connect(self, address: Any) -> None:
            seen.append(address[0])
            super().connect(address)

        def connect_ex(self, address: Any) -> int:
            seen.append(address[0])
            return super().connect_ex(address)

    monkeypatch.setattr(socket, "socket", RecordingSocket)
    return seen


def links(*urls: str) -> str:
    return html("".join(f'<a href="{url}">x</a>' for url in urls), title="Links")


def skip_reasons(result) -> dict[str, str]:
    return {r["url"]: r["reason"] for r in result.exported("skipped.jsonl")}


def broken_urls(result) -> list[str]:
    return [r["url"] for r in result.exported("broken-links.jsonl")]


@deferred_f_from_coro_f
async def test_pages_and_redirects_cannot_lead_to_private_addresses(
    tmp_path, start, victim, connections
):
    port = victim.port
    refused = [
        f"http://127.0.0.2:{port}/",
        f"http://2130706434:{port}/decimal",
        f"http://0x7f000002:{port}/hex",
        f"http://0177.0.0.2:{port}/octal",
        f"http://[::ffff:127.0.0.2]:{port}/mapped",
        "http://169.254.169.254/latest/meta-data/",
    ]
    start.add("/", links(*refused, "/go", "/ok"))
    start.add("/ok", html("fine", title="OK"))
    start.add("/go", Page(status=302, headers=[("Location", victim.url("/moved"))]))
    began = time.monotonic()
    result = await crawl(
        tmp_path,
        start_urls=start.url("/"),
        scope="all",
        log_skipped="1",
        # a connection attempt to 169.254.169.254 would wait this long
        settings={"DOWNLOAD_TIMEOUT": 30},
    )
    assert time.monotonic() - began < 15
    assert victim.requested(method=None) == []
    assert set(connections) == {"127.0.0.1"}
    assert sorted(start.requested()) == ["/", "/go", "/ok", "/robots.txt"]
    reasons = skip_reasons(result)
    assert reasons == {
        **{url: "address" for url in refused},
        victim.url("/moved"): "address",
    }
    assert result.stats["webspider/skipped/url_count/address"] == len(refused) + 1
    assert broken_urls(result) == []


@deferred_f_from_coro_f
async def test_a_subdomain_resolving_to_a_private_address_is_refused(
    tmp_path, server, victim, connections
):
    private = f"http://ip-127-0-0-2.site.test:{victim.port}/"
    server.add("/", links(private, "/ok"))
    server.add("/ok", html("fine"))
    result = await crawl(
        tmp_path, start_urls=server.url("/"), scope="domain", log_skipped="1"
    )
    assert victim.requested(method=None) == []
    assert "127.0.0.2" not in connections
    assert sorted(server.requested()) == ["/", "/ok", "/robots.txt"]
    assert skip_reasons(result) == {private: "address"}
    assert result.stats["webspider/addresses/lookup_count"] == 2  # one per host
    assert broken_urls(result) == []


@deferred_f_from_coro_f
async def test_robots_txt_and_sitemaps_cannot_lead_there_either(
    tmp_path, start, victim, connections
):
    # robots.txt names a sitemap on the private address, and a sitemap of
    # the site lists a private URL
    start.add(
        "/robots.txt",
        Page(
            f"User-agent: *\nAllow: /\nSitemap: {victim.url('/sitemap.xml')}\n"
            f"Sitemap: {start.url('/sitemap.xml')}\n",
            content_type="text/plain",
        ),
    )
    start.add(
        "/sitemap.xml",
        Page(
            '<?xml version="1.0"?><urlset '
            'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{victim.url('/listed')}</loc></url>"
            f"<url><loc>{start.url('/listed')}</loc></url></urlset>",
            content_type="application/xml",
        ),
    )
    start.add("/", html("home"))
    start.add("/listed", html("listed"))
    result = await crawl(
        tmp_path,
        start_urls=start.url("/"),
        scope="all",
        sitemaps="1",
        log_skipped="1",
    )
    assert victim.requested(method=None) == []
    assert set(connections) == {"127.0.0.1"}
    assert sorted(start.requested()) == ["/", "/listed", "/robots.txt", "/sitemap.xml"]
    assert skip_reasons(result) == {
        victim.url("/sitemap.xml"): "address",
        victim.url("/listed"): "address",
    }


@deferred_f_from_coro_f
async def test_a_robots_txt_redirecting_to_a_private_address_is_not_followed(
    tmp_path, server, victim, connections
):
    server.add(
        "/robots.txt",
        Page(status=302, headers=[("Location", victim.url("/robots.txt"))]),
    )
    server.add("/", html("home"))
    await crawl(tmp_path, start_urls=server.url("/"))
    assert victim.requested(method=None) == []
    assert "127.0.0.2" not in connections


class RebindingResolver(LoopbackTestResolver):
    """``rebind.test`` answers a public address once, then 127.0.0.2."""

    answers = ["93.184.216.34"]

    def getHostByName(self, name, timeout=()):
        if name == "rebind.test":
            answers = type(self).answers
            return defer.succeed(answers.pop(0) if answers else "127.0.0.2")
        return super().getHostByName(name, timeout)


@deferred_f_from_coro_f
async def test_a_name_that_changes_its_answer_is_refused_at_connection(
    tmp_path, start, victim, connections, monkeypatch
):
    monkeypatch.setattr(tests.support.crawl, "LoopbackTestResolver", RebindingResolver)
    monkeypatch.setattr(RebindingResolver, "answers", ["93.184.216.34"])
    rebinding = f"http://rebind.test:{victim.port}/"
    start.add("/", links(rebinding))
    result = await crawl(
        tmp_path, start_urls=start.url("/"), scope="all", log_skipped="1"
    )
    assert victim.requested(method=None) == []
    assert set(connections) == {"127.0.0.1"}
    assert skip_reasons(result) == {rebinding: "address"}
    assert result.stats["webspider/addresses/refused_connection_count"] == 1
    assert broken_urls(result) == []


@deferred_f_from_coro_f
async def test_the_allow_list_lets_its_networks_through(
    tmp_path, start, victim, victim3
):
    start.add("/", links(victim.url("/"), victim3.url("/")))
    result = await crawl(
        tmp_path,
        start_urls=start.url("/"),
        scope="all",
        log_skipped="1",
        settings={"WEBSPIDER_ADDRESSES_ALLOW": "127.0.0.2/32"},
    )
    assert victim.requested_pages() == ["/"]
    assert victim3.requested(method=None) == []
    assert skip_reasons(result) == {victim3.url("/"): "address"}


@deferred_f_from_coro_f
async def test_a_start_url_allows_its_own_address(
    tmp_path, victim, victim3, http_client
):
    victim.add("/", links("/a", victim3.url("/")))
    victim.add("/a", html("a"))
    result = await crawl(
        tmp_path, start_urls=victim.url("/"), scope="all", log_skipped="1"
    )
    assert sorted(victim.requested_pages()) == ["/", "/a"]
    assert victim3.requested(method=None) == []
    assert skip_reasons(result) == {victim3.url("/"): "address"}


@deferred_f_from_coro_f
async def test_a_proxy_is_used_but_its_targets_are_judged(
    tmp_path, server, victim, monkeypatch, http_client
):
    # an HTTP proxy on 127.0.0.3 (neither a start address nor allowed): the
    # user chose it, so it is connected to; what it is asked to fetch is judged
    with TestServer("127.0.0.3") as proxy:
        private = f"http://ip-127-0-0-2.site.test:{victim.port}/"
        proxy.add(server.url("/"), links(private, server.url("/ok")))
        proxy.add(server.url("/ok"), html("ok"))
        monkeypatch.setenv("http_proxy", proxy.url("/"))
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        result = await crawl(
            tmp_path, start_urls=server.url("/"), scope="domain", log_skipped="1"
        )
        asked = proxy.requested()
    assert sorted(asked) == sorted(
        [server.url("/"), server.url("/ok"), server.url("/robots.txt")]
    )
    assert server.requested(method=None) == []  # all through the proxy
    assert victim.requested(method=None) == []
    assert skip_reasons(result) == {private: "address"}


def test_the_policy_can_be_switched_off(tmp_path, start, victim):
    start.add("/", links(victim.url("/")))
    proc = run_crawl(
        "-a",
        f"start_urls={start.url('/')}",
        "-a",
        "scope=all",
        "-a",
        f"output={tmp_path / 'out'}",
        "-s",
        "WEBSPIDER_ADDRESSES_ENABLED=0",
    )
    assert proc.returncode == 0, proc.stderr
    assert victim.requested_pages() == ["/"]
    assert "address policy is OFF" in proc.stderr


def test_a_bad_allow_list_is_one_line(tmp_path):
    proc = run_crawl(
        "-a",
        "start_urls=http://site.test/",
        "-a",
        f"output={tmp_path / 'out'}",
        "-s",
        "WEBSPIDER_ADDRESSES_ALLOW=10.0.0.0/8,intranet",
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "webspider: error: WEBSPIDER_ADDRESSES_ALLOW: 'intranet' is not an IP "
        "address or network (CIDR, e.g. 10.0.0.0/8)"
    )


@deferred_f_from_coro_f
async def test_a_checked_link_to_a_private_address_is_one_skip(
    tmp_path, start, victim, connections
):
    # check_external: the link is skipped for the scope, and its check is
    # refused by the address policy: one URL, one skip, counted once; the
    # check of a redirect's target out of the scope is that URL's only skip
    start.add("/", links(victim.url("/"), "/go"))
    start.add("/go", Page(status=302, headers=[("Location", victim.url("/moved"))]))
    result = await crawl(
        tmp_path, start_urls=start.url("/"), check_external="1", log_skipped="1"
    )
    assert victim.requested(method=None) == []
    assert set(connections) == {"127.0.0.1"}
    assert skip_reasons(result) == {
        victim.url("/"): "scope",
        victim.url("/moved"): "address",
    }
    stats = result.stats
    assert stats["webspider/skipped/url_count"] == 2
    assert stats["webspider/skipped/url_count/scope"] == 1
    assert stats["webspider/skipped/url_count/address"] == 1
    assert broken_urls(result) == []
