"""Crawl-delay and Retry-After, measured from the test server's own request
timestamps (the start of each request as the server saw it)."""

from __future__ import annotations

import logging
import time
from email.utils import formatdate
from itertools import pairwise

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, SeenRequest, TestServer, html

pytestmark = pytest.mark.e2e

#: timers may fire a little early, and the clock is read a little late
TOLERANCE = 0.05


def robots(text: str) -> Page:
    return Page(text, content_type="text/plain")


def starts(server: TestServer, path_prefix: str = "/") -> list[float]:
    return [r.time for r in server.log if r.path.startswith(path_prefix)]


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in pairwise(times)]


def star(server: TestServer, n: int) -> None:
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(n))
    server.add("/", html(links))
    for i in range(n):
        server.add(f"/p{i}", html(f"page {i}"))


@deferred_f_from_coro_f
async def test_crawl_delay_spaces_request_starts(tmp_path, server):
    """Whatever the concurrency: 8 per domain would start all pages at once."""
    star(server, 2)
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 1\n"))
    result = await crawl(
        tmp_path,
        settings={"CONCURRENT_REQUESTS_PER_DOMAIN": 8},
        start_urls=server.url("/"),
    )
    assert len(server.requested_pages()) == 3
    # robots.txt, then every page at least a second after the one before
    assert min(gaps(starts(server))) >= 1 - TOLERANCE
    assert result.stats["webspider/politeness/crawl_delay_origin_count"] == 1


@deferred_f_from_coro_f
async def test_crawl_delay_never_below_download_delay(tmp_path, server):
    star(server, 2)
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 0.2\n"))
    await crawl(
        tmp_path,
        settings={"DOWNLOAD_DELAY": 0.6, "CONCURRENT_REQUESTS_PER_DOMAIN": 8},
        start_urls=server.url("/"),
    )
    assert len(server.requested_pages()) == 3
    # no jitter either: the random ±50% would start some requests sooner
    assert min(gaps(starts(server))) >= 0.6 - TOLERANCE


@deferred_f_from_coro_f
async def test_crawl_delay_over_the_cap_is_capped(tmp_path, server, caplog):
    star(server, 2)
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 3600\n"))
    with caplog.at_level(logging.WARNING):
        result = await crawl(
            tmp_path,
            settings={"WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX": 0.5},
            start_urls=server.url("/"),
        )
    times = starts(server)
    assert len(times) == 4
    assert min(gaps(times)) >= 0.5 - TOLERANCE
    assert max(gaps(times)) < 1.5
    assert "asks for Crawl-delay 3600s; crawling it at the 0.5s cap" in caplog.text
    assert result.stats["webspider/politeness/crawl_delay_capped_count"] == 1


@deferred_f_from_coro_f
async def test_crawl_delay_over_the_cap_can_skip_the_origin(tmp_path, server):
    star(server, 2)
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 3600\n"))
    result = await crawl(
        tmp_path,
        settings={
            "WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX": 0.5,
            "WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX": "skip",
        },
        start_urls=server.url("/"),
    )
    assert server.requested() == ["/robots.txt"]
    assert result.stats["webspider/skipped/url_count/crawl_delay"] == 1


def once_then_ok(answer: Page) -> object:
    """A route that gives ``answer`` the first time, then a page."""
    calls: list[float] = []

    def route(seen: SeenRequest) -> Page:
        calls.append(seen.time)
        return answer if len(calls) == 1 else Page(html("ok"))

    return route


def busy_once(
    status: int, retry_after: str | None = None
) -> tuple[object, list[float]]:
    """A route answering ``status`` with Retry-After once, then a page; and
    the list it records the (monotonic) answer time in. With no value given,
    Retry-After is an HTTP date 2 s ahead (1 to 2 s, dates are whole seconds)
    and the recorded time is when that date is reached."""
    answered: list[float] = []

    def route(seen: SeenRequest) -> Page:
        if answered:
            return Page(html("ok"))
        value = retry_after
        answered.append(time.monotonic())
        if value is None:
            wall = time.time()
            date = int(wall) + 2
            answered.append(answered[0] + (date - wall))
            value = formatdate(date, usegmt=True)
        return Page("busy", status=status, headers=[("Retry-After", value)])

    return route, answered


#: Pages of one depth leave the scheduler together (the strict level barrier,
#: docs/depth-and-rounds.md), so "the others carry on" is shown with pages of
#: the same depth; slot delays spread them out so the pause has something to
#: hold back (without one they would all be on the wire before the 429).
SLOTS = {
    "site.test": {"delay": 0.2, "jitter": 0},
    "other.test": {"delay": 0.1, "jitter": 0},
}


def siblings(server: TestServer, prefix: str, n: int) -> None:
    server.add("/", html("".join(f'<a href="/{prefix}{i}">x</a>' for i in range(n))))
    for i in range(n):
        server.add(f"/{prefix}{i}", html(f"{prefix}{i}"))


@deferred_f_from_coro_f
async def test_retry_after_seconds_pauses_the_host_only(tmp_path, server, other_server):
    """/p0 answers 429 Retry-After: 1 once. For that second nothing goes to
    the host (its other pages wait), then /p0 is retried; the other host is
    crawled meanwhile."""
    siblings(server, "p", 4)
    route, answered = busy_once(429, "1")
    server.add("/p0", route)
    siblings(other_server, "o", 12)
    result = await crawl(
        tmp_path,
        settings={"DOWNLOAD_SLOTS": SLOTS},
        start_urls=f"{server.url('/')},{other_server.url('/')}",
        scope="all",
    )
    pause_start = answered[0]
    # requests already on their way when the 429 left are not held back
    later = [r for r in server.log if r.time > pause_start + 0.05]
    assert sorted(r.path for r in later) == ["/p0", "/p1", "/p2", "/p3"]
    assert min(r.time for r in later) >= pause_start + 1 - TOLERANCE
    # all of other.test is done before site.test's pause is over
    during = [t for t in starts(other_server, "/o") if t < pause_start + 1]
    assert len(during) >= 4
    assert result.stats["webspider/politeness/retry_after_retried_count"] == 1
    assert result.stats["webspider/politeness/retry_after_pause_count"] == 1
    assert len(result.items) == 5 + 13


@deferred_f_from_coro_f
async def test_retry_after_http_date(tmp_path, server):
    siblings(server, "p", 3)
    route, answered = busy_once(503)
    server.add("/p0", route)
    await crawl(
        tmp_path, settings={"DOWNLOAD_SLOTS": SLOTS}, start_urls=server.url("/")
    )
    pause_start, resume = answered
    later = [r for r in server.log if r.time > pause_start + 0.05]
    assert sorted(r.path for r in later) == ["/p0", "/p1", "/p2"]
    assert min(r.time for r in later) >= resume - TOLERANCE


@deferred_f_from_coro_f
async def test_retry_after_cap(tmp_path, server):
    server.add(
        "/", once_then_ok(Page("busy", status=429, headers=[("Retry-After", "3600")]))
    )
    await crawl(
        tmp_path,
        settings={"WEBSPIDER_POLITENESS_RETRY_AFTER_MAX": 0.5},
        start_urls=server.url("/"),
    )
    # the 429 and its retry, the server's own timestamps (robots.txt aside)
    times = [r.time for r in server.log if r.path == "/"]
    assert len(times) == 2
    assert 0.5 - TOLERANCE <= times[1] - times[0] < 2


@deferred_f_from_coro_f
async def test_past_the_retry_budget_is_a_failure(tmp_path, server, caplog):
    server.add("/", Page("busy", status=503, headers=[("Retry-After", "0")]))
    with caplog.at_level(logging.WARNING):
        result = await crawl(
            tmp_path,
            settings={"WEBSPIDER_POLITENESS_RETRY_TIMES": 2, "RETRY_TIMES": 2},
            start_urls=server.url("/"),
        )
    # 1 + 2 retries; Scrapy's RetryMiddleware does not add its own after that
    assert server.requested_pages() == ["/", "/", "/"]
    assert result.stats["webspider/politeness/retry_after_gave_up_count"] == 1
    assert result.stats["webspider/pages/failed_count"] == 1
    assert "Gave up on" in caplog.text


@deferred_f_from_coro_f
async def test_waiting_requests_do_not_block_other_hosts(
    tmp_path, server, other_server
):
    """With CONCURRENT_REQUESTS=2, the ten requests waiting out site.test's
    pause and then its Crawl-delay would fill the downloader; they wait
    aside, and other.test's pages (of the same depth) go on meanwhile."""
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 0.2\n"))
    # a 2 s pause: room for other.test's ten pages even on a loaded machine
    route, answered = busy_once(429, "2")
    server.add("/first", route)
    links = [server.url("/first")] + [server.url(f"/x{i}") for i in range(10)]
    links += [other_server.url(f"/o{i}") for i in range(10)]
    other_server.add("/", html("".join(f'<a href="{u}">x</a>' for u in links)))
    result = await crawl(
        tmp_path,
        settings={
            "CONCURRENT_REQUESTS": 2,
            "DOWNLOAD_SLOTS": {"other.test": {"delay": 0.05, "jitter": 0}},
        },
        start_urls=other_server.url("/"),
        scope="all",
    )
    pause_start = answered[0]
    # all of other.test is done before site.test's pause is over
    during = [t for t in starts(other_server, "/o") if t < pause_start + 2]
    assert len(during) == 10
    later = [r.time for r in server.log if r.time > pause_start + 0.05]
    assert len(later) == 11  # /first again and the ten
    assert min(later) >= pause_start + 2 - TOLERANCE
    assert min(gaps(later)) >= 0.2 - TOLERANCE
    assert result.stats["webspider/politeness/waited_request_count"] >= 10


@deferred_f_from_coro_f
async def test_closing_drops_requests_waiting_for_their_turn(tmp_path, server):
    """A crawl that closes (here: CLOSESPIDER_PAGECOUNT) does not sit out the
    Crawl-delay turns of the requests still waiting; they are dropped."""
    star(server, 10)
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 1\n"))
    started = time.monotonic()
    result = await crawl(
        tmp_path,
        settings={"CLOSESPIDER_PAGECOUNT": 3},
        start_urls=server.url("/"),
    )
    assert time.monotonic() - started < 5  # not the ten seconds of turns
    assert len(server.requested_pages()) < 5
    assert result.stats["webspider/politeness/dropped_at_close_count"] >= 5
    assert result.stats["finish_reason"] == "closespider_pagecount"
