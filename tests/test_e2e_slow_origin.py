"""One slow origin never stalls the others for long, and a hanging page
costs one download timeout, not three (README "Bounds and traps")."""

from __future__ import annotations

import time

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, TestServer, html

#: longer than the tests' own crawls use (10 s); robots.txt had this one
#: (a user's is 60 s: long enough for the test to time out)
PAGE_TIMEOUT = {"DOWNLOAD_TIMEOUT": 20}


def healthy_site(server: TestServer) -> list[str]:
    """Three levels of pages; their paths."""
    server.add("/", html('<a href="/a">a</a><a href="/b">b</a>'))
    server.add("/a", html('<a href="/a/1">1</a>'))
    server.add("/b", html('<a href="/b/1">1</a>'))
    server.add("/a/1", html("a1"))
    server.add("/b/1", html("b1"))
    return ["/", "/a", "/a/1", "/b", "/b/1"]


@pytest.mark.parametrize(
    "robots",
    [
        # 1 byte a second: the download never ends before a timeout does
        Page(b"User-agent: *\nAllow: /\n" * 10, content_type="text/plain", trickle=1),
        # no answer at all
        Page(b"", content_type="text/plain", delay=120),
    ],
    ids=["trickling", "hanging"],
)
@deferred_f_from_coro_f
async def test_a_slow_robots_txt_does_not_hold_the_other_hosts(
    tmp_path, server, other_server, robots, http_client
):
    pages = healthy_site(server)
    other_server.add("/robots.txt", robots)
    other_server.add("/", html("never fetched"))
    started = time.monotonic()
    result = await crawl(
        tmp_path,
        settings={
            **PAGE_TIMEOUT,
            "WEBSPIDER_ROBOTSTXT_DOWNLOAD_TIMEOUT": 1,
            "WEBSPIDER_ROBOTSTXT_RETRY_TIMES": 1,
        },
        start_urls=f"{server.url('/')},{other_server.url('/')}",
    )
    healthy_done = max(r.time for r in server.log)
    assert sorted(server.requested_pages()) == pages
    # two attempts of 1 s each (and the short retry delay), not of 20 s
    assert healthy_done - started < 10
    assert other_server.requested() == ["/robots.txt", "/robots.txt"]
    assert result.stats["webspider/skipped/url_count/robots_unreachable"] == 1


@deferred_f_from_coro_f
async def test_a_hanging_page_costs_one_timeout(tmp_path, server, http_client):
    server.add("/", html('<a href="/hang">hang</a><a href="/ok">ok</a>'))
    server.add("/hang", Page(html("late"), delay=60))
    server.add("/ok", html("ok"))
    started = time.monotonic()
    result = await crawl(
        tmp_path,
        # Scrapy's retries, as a user has them (the tests' own crawls use 0)
        settings={"DOWNLOAD_TIMEOUT": 2, "RETRY_TIMES": 2},
        start_urls=server.url("/"),
    )
    elapsed = time.monotonic() - started
    assert server.requested_pages().count("/hang") == 1
    assert elapsed < 2 * 2  # one timeout, not three
    broken = result.exported("broken-links.jsonl")
    assert [(b["url"], b["error"]) for b in broken] == [
        (server.url("/hang"), "timeout")
    ]
