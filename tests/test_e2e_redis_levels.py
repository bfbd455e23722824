"""Workers on Redis keep the levels full: a level that opens is taken at once
by every worker with room, not on the engine's next heartbeat.

A depth-d request of an origin is leased only when no smaller depth of that
origin is queued or leased (the level barrier). What opens a level is an
acknowledgement — this worker's own, or another worker's — which Scrapy's
engine does not see: it would ask the scheduler again only on its 5-second
heartbeat. The workers here run with that heartbeat made hourly
(tests/support/heartbeat.py), so a wake-up that is missing stalls the crawl
instead of slowing it, and the server holds the level's pages until all of
them are in flight at once: both workers must have taken part.
"""

from __future__ import annotations

import subprocess
import threading
from collections import Counter
from typing import TYPE_CHECKING

from tests.support.cli import start_crawl
from tests.support.server import Page, html

if TYPE_CHECKING:
    from pathlib import Path

    from tests.support.server import SeenRequest, TestServer

#: pages of level 1: two workers of CONCURRENT_REQUESTS=8
LEVEL = 16
#: the server gives up waiting for the whole level after this (a failing
#: run then goes on, and the count of requests in flight says what failed)
GIVE_UP = 20.0


class WholeLevel:
    """A route holding each request until ``LEVEL`` of them are in flight."""

    def __init__(self) -> None:
        self.arrived = 0
        self.cond = threading.Condition()

    def __call__(self, seen: SeenRequest) -> Page:
        with self.cond:
            self.arrived += 1
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.arrived >= LEVEL, timeout=GIVE_UP)
        i = seen.path.rsplit("/", 1)[1]
        return Page(html(f'<a href="/m/{i}">next</a><a href="/">home</a>'))


def start(server: TestServer, out: Path, state_url: str) -> subprocess.Popen[str]:
    return start_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}", "-a", "mirror=0"),
        *("-s", "CONCURRENT_REQUESTS=8", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=32"),
        *("-s", "WEBSPIDER_PROGRESS=off", "-s", "RETRY_TIMES=0"),
        *("-s", f"WEBSPIDER_STATE={state_url}"),
        *("-s", 'EXTENSIONS={"tests.support.heartbeat.RareHeartbeat": 0}'),
    )


def finish(workers: list[subprocess.Popen[str]]) -> None:
    for worker in workers:
        try:
            log = worker.communicate(timeout=90)[0]
        except subprocess.TimeoutExpired:
            for w in workers:
                w.kill()
            raise AssertionError(
                "the workers stalled: one was not woken when a level opened"
            ) from None
        assert worker.returncode == 0, log[-3000:]
        assert "Spider closed (finished)" in log, log[-3000:]


def test_two_workers_take_a_level_together_as_soon_as_it_opens(
    server, redis_url, tmp_path
):
    server.add("/", html("".join(f'<a href="/l/{i}">{i}</a>' for i in range(LEVEL))))
    server.add_prefix("/l/", WholeLevel())
    server.add_prefix("/m/", Page(html('<a href="/">home</a>')))
    workers = [start(server, tmp_path / "out", redis_url) for _ in range(2)]
    finish(workers)
    served = Counter(server.requested_pages())
    assert len(served) == 1 + 2 * LEVEL
    assert max(served.values()) == 1
    # one worker holds 8: the other was woken while they were held
    assert server.max_in_flight == LEVEL


def test_one_worker_goes_on_when_its_own_pages_open_the_next_level(
    server, redis_url, tmp_path
):
    # its acknowledgements go to Redis with its commit: a worker waiting at
    # the barrier for its own pages sends them, rather than waiting for them
    server.add("/", html("".join(f'<a href="/l/{i}">{i}</a>' for i in range(3))))
    server.add_prefix("/l/", Page(html('<a href="/m/x">next</a>')))
    server.add("/m/x", html("end"))
    finish([start(server, tmp_path / "out", redis_url)])
    assert sorted(server.requested_pages()) == ["/", "/l/0", "/l/1", "/l/2", "/m/x"]
