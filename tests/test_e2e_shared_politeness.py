"""Politeness shared by the workers of one crawl through Redis, measured from
the test server's own request log.

The workers are ``scrapy crawl`` processes sharing one crawl on a real
redis-server (``WEBSPIDER_STATE``): the requests of all of them together
must keep the site's Crawl-delay, its Retry-After pauses and its
per-origin limit, and robots.txt is fetched once for all. A "dead worker"
is a robots.txt claim or a place taken in Redis under a token nobody
renews, as a worker killed with ``kill -9`` leaves them (in-process crawls
there, as in the control: three crawls of their own without Redis).
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections import Counter
from itertools import pairwise
from typing import TYPE_CHECKING

import pytest
from redis import Redis
from scrapy.utils.defer import (
    deferred_f_from_coro_f,
    deferred_from_coro,
    maybe_deferred_to_future,
)
from twisted.internet.defer import DeferredList

from tests.support.cli import start_crawl
from tests.support.crawl import CrawlResult, crawl
from tests.support.server import Page, SeenRequest, TestServer, html
from webspider.politeness.redisstore import CLAIMED, GO, RedisPoliteness

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.e2e

#: timers may fire a little early, and the server reads its clock a little
#: late: four workers and a redis-server on 2 cores under load delay one
#: request's log time more than the next one's (a gap of 0.946 s was seen at
#: load 8). Without shared politeness the gaps are near 0, so this still fails.
TOLERANCE = 0.1


def robots(text: str) -> Page:
    return Page(text, content_type="text/plain")


def star(server: TestServer, n: int) -> None:
    server.add("/", html("".join(f'<a href="/p{i}">{i}</a>' for i in range(n))))
    for i in range(n):
        server.add(f"/p{i}", html(f"page {i}"))


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in pairwise(sorted(times))]


async def workers(
    tmp_path, n: int, url: str, start: str, **settings: object
) -> list[CrawlResult]:
    """``n`` crawls at once, sharing the Redis at ``url``."""
    runs = [
        deferred_from_coro(
            crawl(
                tmp_path / f"w{i}",
                settings={"WEBSPIDER_STATE": url, **settings},
                start_urls=start,
            )
        )
        for i in range(n)
    ]
    results = await maybe_deferred_to_future(
        DeferredList(runs, fireOnOneErrback=True, consumeErrors=True)
    )
    return [result for _ok, result in results]


def start_worker(
    server: TestServer, out: Path, state_url: str, *extra: str
) -> subprocess.Popen[str]:
    """One worker, as a user starts it on each machine."""
    return start_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-a", "mirror=0", "-s", "WEBSPIDER_PROGRESS=off"),
        *("-s", f"WEBSPIDER_STATE={state_url}"),
        *extra,
    )


def responses(log: str) -> int:
    """Responses a worker received, from the stats it logs at the end."""
    found = re.search(r"'response_received_count': (\d+)", log)
    return int(found.group(1)) if found else 0


def run_workers(
    n: int, server: TestServer, out: Path, state_url: str, *extra: str
) -> list[str]:
    """``n`` workers of one crawl, started together; their logs."""
    workers = [start_worker(server, out, state_url, *extra) for _ in range(n)]
    logs = []
    for worker in workers:
        log = worker.communicate(timeout=180)[0]
        assert worker.returncode == 0, log[-3000:]
        logs.append(log)
    return logs


def test_crawl_delay_and_robots_txt_hold_for_all_workers(tmp_path, server, redis_url):
    """4 workers, 8 pages, Crawl-delay 1: one robots.txt for the crawl, and
    the starts of all workers together a second apart at the server."""
    star(server, 7)
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 1\n"))
    # One request at a time per worker (none waiting beside it): else the
    # first worker would lease all 8 pages and wait out the delays alone.
    logs = run_workers(
        4,
        server,
        tmp_path / "out",
        redis_url,
        *("-s", "CONCURRENT_REQUESTS=1", "-s", "WEBSPIDER_MAX_WAITING_REQUESTS=0"),
    )
    assert server.requested().count("/robots.txt") == 1
    assert sorted(server.requested_pages()) == sorted(
        ["/", *(f"/p{i}" for i in range(7))]
    )
    # robots.txt included: every start at least the Crawl-delay after the last
    assert min(gaps([r.time for r in server.log])) >= 1 - TOLERANCE
    # more than one worker took part (else the test shows nothing)
    served = [responses(log) for log in logs]
    assert sum(served) == 9
    assert sum(1 for n in served if n) >= 2, served


def test_workers_share_a_crawl_delay_origin(tmp_path, server, redis_url):
    """2 workers at their usual concurrency, 12 pages under Crawl-delay 1:
    the first to read the home page must not lease all its links and wait
    out the delays alone (it holds two of them at most), so the server
    sees the pages asked for by both workers (told apart by their
    User-Agent)."""
    star(server, 12)
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 1\n"))
    out = tmp_path / "out"
    both_up = threading.Event()
    home = server.routes["/"]
    assert isinstance(home, Page)

    def gated_home(seen: SeenRequest) -> Page:
        # the links are found once both workers can lease them
        both_up.wait(120)
        return home

    server.add("/", gated_home)
    agents = ("worker-a", "worker-b")
    started = [
        start_worker(server, out, redis_url, "-s", f"USER_AGENT={agent}")
        for agent in agents
    ]
    deadline = time.monotonic() + 120
    while not all((out / f"worker-{n}/pages.jsonl").exists() for n in (1, 2)):
        assert time.monotonic() < deadline
        assert all(w.poll() is None for w in started)
        time.sleep(0.1)
    both_up.set()
    for worker in started:
        log = worker.communicate(timeout=180)[0]
        assert worker.returncode == 0, log[-3000:]
    pages = [r for r in server.log if r.path.startswith("/p")]
    assert len(pages) == 12
    by_agent = Counter(r.headers.get("User-Agent") for r in pages)
    assert set(by_agent) == set(agents), by_agent


def test_retry_after_from_one_worker_pauses_the_origin_for_all(
    tmp_path, server, redis_url
):
    """One place at the origin for all workers, so nothing is on its way
    when the 503 leaves; after it, no worker starts anything there for the
    2 seconds it asks, and then the crawl goes on."""
    star(server, 6)
    answered: list[float] = []

    def busy_once(seen: SeenRequest) -> Page:
        if answered:
            return Page(html("ok"))
        answered.append(seen.time)
        return Page("busy", status=503, headers=[("Retry-After", "2")])

    server.add("/p1", busy_once)
    run_workers(
        3,
        server,
        tmp_path / "out",
        redis_url,
        *("-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1"),
    )
    assert len(answered) == 1
    pause_start = answered[0]
    later = [r for r in server.log if r.time > pause_start]
    assert "/p1" in [r.path for r in later]  # retried after the pause
    assert min(r.time for r in later) >= pause_start + 2 - TOLERANCE
    assert server.max_in_flight == 1
    assert server.requested().count("/p1") == 2


@deferred_f_from_coro_f
async def test_without_shared_state_each_worker_keeps_its_own(tmp_path, server):
    """The control: the same crawls without Redis fetch robots.txt each and
    space only their own requests (so the test above can fail)."""
    star(server, 2)
    server.add("/robots.txt", robots("User-agent: *\nCrawl-delay: 0.5\n"))
    await workers(tmp_path, 3, "", server.url("/"))
    assert server.requested().count("/robots.txt") == 3
    assert min(gaps([r.time for r in server.log])) < 0.5 - TOLERANCE


@deferred_f_from_coro_f
async def test_a_dead_workers_robots_claim_runs_out(
    tmp_path,
    server,
    redis_url,
):
    star(server, 1)
    server.add("/robots.txt", robots("User-agent: *\nDisallow: /p0\n"))
    store = RedisPoliteness(Redis.from_url(redis_url))
    origin = f"http://{server.name}:{server.port}"
    assert store.robots_claim(origin, "dead", 1.0)[0] == CLAIMED
    started = time.monotonic()
    (result,) = await workers(
        tmp_path, 1, redis_url, server.url("/"), WEBSPIDER_STATE_LEASE_TIMEOUT=1
    )
    # the worker waited for the claim, then fetched robots.txt itself
    assert server.requested() == ["/robots.txt", "/"]
    assert server.log[0].time >= started + 1 - TOLERANCE
    assert result.stats["webspider/robotstxt/fetched_count"] == 1


@deferred_f_from_coro_f
async def test_a_dead_workers_place_comes_free(
    tmp_path,
    server,
    redis_url,
):
    star(server, 1)
    store = RedisPoliteness(Redis.from_url(redis_url))
    origin = f"http://{server.name}:{server.port}"
    assert store.turn(origin, "dead", delay=0, limit=1, lease_timeout=1.0)[0] == GO
    started = time.monotonic()
    (result,) = await workers(
        tmp_path,
        1,
        redis_url,
        server.url("/"),
        CONCURRENT_REQUESTS_PER_DOMAIN=1,
        WEBSPIDER_STATE_LEASE_TIMEOUT=1,
    )
    assert server.requested() == ["/robots.txt", "/", "/p0"]
    assert server.log[0].time >= started + 1 - TOLERANCE
    assert len(result.items) == 2
    # every place this worker took, it gave back
    assert store.in_flight(origin) == 0


def test_a_worker_killed_while_fetching_robots_txt(tmp_path, server, redis_url):
    """``kill -9`` of the worker that claimed robots.txt, its fetch not
    answered yet: the claim runs out, another worker fetches robots.txt,
    and every worker obeys it (the disallowed pages are never asked for)."""
    server.add(
        "/",
        html(
            "".join(f'<a href="/p{i}">{i}</a>' for i in range(4))
            + '<a href="/private/a">a</a><a href="/private/b">b</a>'
        ),
    )
    for i in range(4):
        server.add(f"/p{i}", html(f'page {i} <a href="/private/{i}">x</a>'))
    server.add_prefix("/private/", Page(html("secret")))
    rules = robots("User-agent: *\nDisallow: /private\n")
    hold = threading.Event()

    def robots_txt(seen: SeenRequest) -> Page:
        if seen.headers.get("User-Agent") == "victim":
            hold.wait(60)  # never answered while the victim lives
        return rules

    server.add("/robots.txt", robots_txt)
    out = tmp_path / "out"
    # short enough for a quick test, long enough that a live worker's
    # renewals (every quarter of it) are not late on a loaded machine
    lease = ("-s", "WEBSPIDER_STATE_LEASE_TIMEOUT=4")
    victim = start_worker(server, out, redis_url, *lease, "-s", "USER_AGENT=victim")
    deadline = time.monotonic() + 120
    while "/robots.txt" not in server.requested():
        assert time.monotonic() < deadline
        assert victim.poll() is None, victim.communicate()[0][-3000:]
        time.sleep(0.05)
    victim.kill()
    victim.communicate()
    try:
        others = [
            start_worker(server, out, redis_url, *lease, "-s", f"USER_AGENT=w{n}")
            for n in range(2)
        ]
        for worker in others:
            log = worker.communicate(timeout=180)[0]
            assert worker.returncode == 0, log[-3000:]
    finally:
        hold.set()
    requested = server.requested()
    assert [p for p in requested if p.startswith("/private")] == []
    # the victim's fetch, and one more once its claim ran out
    assert requested.count("/robots.txt") == 2
    assert sorted(server.requested_pages()) == ["/", "/p0", "/p1", "/p2", "/p3"]
