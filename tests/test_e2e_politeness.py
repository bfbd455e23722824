"""Crawl-delay and Retry-After, measured from the test server's own request
timestamps (the start of each request as the server saw it)."""

from __future__ import annotations

import logging
import time
from email.utils import formatdate
from itertools import pairwise

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, SeenRequest, TestServer, html

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


@deferred_f_from_coro_f
async def test_retry_after_seconds_pauses_the_host_only(tmp_path, server, other_server):
    """/p0 answers 429 Retry-After: 1 once. For that second nothing goes to
    the host: the links found meanwhile (/q*, on the slow /p1) wait, and /p0
    is retried after it; the other host is crawled meanwhile."""
    answered: list[float] = []

    def busy(seen: SeenRequest) -> Page:
        if answered:
            return Page(html("ok"))
        answered.append(time.monotonic())
        return Page("busy", status=429, headers=[("Retry-After", "1")])

    server.add("/", html('<a href="/p0">0</a><a href="/p1">1</a>'))
    server.add("/p0", busy)
    q_links = "".join(f'<a href="/q{i}">{i}</a>' for i in range(3))
    server.add("/p1", Page(html(q_links), delay=0.3))
    for i in range(3):
        server.add(f"/q{i}", html("q"))
    # a chain of slow pages on the other host: 8 x 0.2 s
    for i in range(8):
        link = f'<a href="/c{i + 1}">next</a>' if i < 7 else "end"
        other_server.add(f"/c{i}", Page(html(link), delay=0.2))
    result = await crawl(
        tmp_path,
        start_urls=f"{server.url('/')},{other_server.url('/c0')}",
        scope="all",
    )
    pause_start = answered[0]
    # requests already on their way when the 429 left are not held back
    later = [r for r in server.log if r.time > pause_start + 0.05]
    assert sorted(r.path for r in later) == ["/p0", "/q0", "/q1", "/q2"]
    assert min(r.time for r in later) >= pause_start + 1 - TOLERANCE
    assert any(pause_start < t < pause_start + 1 for t in starts(other_server))
    assert result.stats["webspider/politeness/retry_after_retried_count"] == 1
    assert result.stats["webspider/politeness/retry_after_pause_count"] == 1
    assert len(result.items) == 6 + 8


@deferred_f_from_coro_f
async def test_retry_after_http_date(tmp_path, server):
    resume: list[float] = []

    def busy(seen: SeenRequest) -> Page:
        if resume:
            return Page(html("ok"))
        wall, now = time.time(), time.monotonic()
        date = int(wall) + 2  # HTTP dates have whole seconds: 1 to 2 s from now
        resume.append(now + (date - wall))
        header = formatdate(date, usegmt=True)
        return Page("busy", status=503, headers=[("Retry-After", header)])

    server.add("/", html('<a href="/p0">0</a><a href="/p1">1</a>'))
    server.add("/p0", busy)
    server.add("/p1", Page(html('<a href="/q0">q</a>'), delay=0.3))
    server.add("/q0", html("q"))
    await crawl(tmp_path, start_urls=server.url("/"))
    first = next(r.time for r in server.log if r.path == "/p0")
    later = [r for r in server.log if r.time > first + 0.2]
    assert sorted(r.path for r in later) == ["/p0", "/q0"]
    assert min(r.time for r in later) >= resume[0] - TOLERANCE


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
    assert (
        gaps(starts(server, "/")[1:]) and 0.5 - TOLERANCE <= gaps(starts(server))[1] < 2
    )


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
    """With CONCURRENT_REQUESTS=2, twenty requests waiting out site.test's
    pause would fill the downloader; they wait aside, and other.test's
    chain of pages goes on during the pause."""
    answered: list[float] = []

    def busy(seen: SeenRequest) -> Page:
        if answered:
            return Page(html("ok"))
        answered.append(time.monotonic())
        return Page("busy", status=429, headers=[("Retry-After", "1")])

    server.add("/", busy)
    links = "".join(f'<a href="{server.url(f"/x{i}")}">x</a>' for i in range(20))
    other_server.add("/", html(links + '<a href="/c0">c</a>'))
    for i in range(8):
        link = f'<a href="/c{i + 1}">next</a>' if i < 7 else "end"
        other_server.add(f"/c{i}", Page(html(link), delay=0.1))
    result = await crawl(
        tmp_path,
        settings={"CONCURRENT_REQUESTS": 2},
        start_urls=f"{server.url('/')},{other_server.url('/')}",
        scope="all",
    )
    pause_start = answered[0]
    during = [t for t in starts(other_server, "/c") if t < pause_start + 1]
    assert len(during) >= 4
    assert min(r.time for r in server.log[2:]) >= pause_start + 1 - TOLERANCE
    assert len(server.requested_pages()) == 22  # "/" twice and the 20 links
    assert result.stats["webspider/politeness/retry_after_waited_request_count"] >= 2
