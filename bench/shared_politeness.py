"""Shared politeness: what the server sees from 4 workers, and what a crawl
of one process pays for the feature.

    cd /work/wt/sharedpolite && PYTHONPATH=$PWD python bench/shared_politeness.py gaps
    PYTHONPATH=$PWD python bench/shared_politeness.py overhead   # compare with main:
    PYTHONPATH=/work/main python bench/shared_politeness.py overhead

``gaps``: a local site of 12 pages whose robots.txt says ``Crawl-delay: 1``,
crawled by 4 ``scrapy crawl`` workers sharing a real redis-server
(``WEBSPIDER_STATE``); prints the min and median gap between request starts
as the server logged them (target: min ≥ 0.95 s), how many workers served
pages, and how often robots.txt was fetched (target: once).

``gaps usual``: the same, each worker at its usual concurrency (16
requests, a waiting room): how evenly the workers share the origin (before
the bound of webspider.frontier.holding, the first worker to read the home
page leased all its links and the others idled).

``overhead``: the politeness and robots.txt middlewares' per-request work in
a crawl without a shared state (process_request and process_response of a
request to an origin whose rules are known), in ns per request, median of 7.
"""

from __future__ import annotations

import contextlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGES = 12
WORKERS = 4


def gaps(usual: bool = False) -> None:
    from tests.support.cli import scrapy_command, scrapy_env  # noqa: PLC0415
    from tests.support.redis_server import RedisServer  # noqa: PLC0415
    from tests.support.server import Page, TestServer, html  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp, TestServer() as server:
        server.add("/robots.txt", Page("User-agent: *\nCrawl-delay: 1\n"))
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(PAGES - 1))
        server.add("/", html(links))
        for i in range(PAGES - 1):
            server.add(f"/p{i}", html(f"page {i}"))
        with RedisServer(Path(tmp) / "redis") as redis:
            started = time.monotonic()
            workers = [
                subprocess.Popen(
                    scrapy_command(
                        *("-a", f"url={server.url('/')}"),
                        *("-a", f"output={tmp}/out", "-a", "mirror=0"),
                        *("-s", f"WEBSPIDER_STATE={redis.url}"),
                        *("-s", "WEBSPIDER_PROGRESS=off"),
                        # one request at a time each, so all 4 take part
                        *(
                            ()
                            if usual
                            else (
                                *("-s", "CONCURRENT_REQUESTS=1"),
                                *("-s", "WEBSPIDER_MAX_WAITING_REQUESTS=0"),
                            )
                        ),
                    ),
                    cwd=ROOT,
                    env=scrapy_env(),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                for _ in range(WORKERS)
            ]
            logs = [w.communicate(timeout=300)[0] for w in workers]
            seconds = time.monotonic() - started
        codes = [w.returncode for w in workers]
        times = sorted(r.time for r in server.log)
        between = [b - a for a, b in pairwise(times)]
        served = []
        for log in logs:
            found = re.search(r"'response_received_count': (\d+)", log)
            served.append(int(found.group(1)) if found else 0)
        print(
            f"shared Crawl-delay 1 s, {WORKERS} workers, {PAGES} pages: "
            f"min gap {min(between):.3f} s, median {statistics.median(between):.3f} s, "
            f"robots.txt fetched {server.requested().count('/robots.txt')}x, "
            f"responses per worker {served}, exit codes {codes}, {seconds:.1f} s"
        )


def overhead() -> None:
    from scrapy.utils.reactor import install_reactor  # noqa: PLC0415

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from scrapy import Request, Spider  # noqa: PLC0415
    from scrapy.http import HtmlResponse  # noqa: PLC0415
    from scrapy.settings import Settings  # noqa: PLC0415
    from scrapy.utils.misc import build_from_crawler  # noqa: PLC0415
    from scrapy.utils.test import get_crawler  # noqa: PLC0415

    from webspider.politeness.middleware import PolitenessMiddleware  # noqa: PLC0415
    from webspider.politeness.robotsrules import RobotsRules  # noqa: PLC0415
    from webspider.politeness.robotstxt import (  # noqa: PLC0415
        OriginRobots,
        RobotsTxtMiddleware,
    )

    settings = Settings()
    settings.setmodule("webspider.settings", priority="project")
    crawler = get_crawler(Spider, settings.copy_to_dict())
    polite = build_from_crawler(PolitenessMiddleware, crawler)
    robots = build_from_crawler(RobotsTxtMiddleware, crawler)
    origin = ("http", "site.test", 80)
    robots._origins[origin] = OriginRobots(
        state="ready",
        parser=RobotsRules.parse("User-agent: *\nDisallow: /private\n"),
        expires=time.monotonic() + 3600,
    )
    n = 20000
    requests = [Request(f"http://site.test/p{i}") for i in range(n)]
    responses = [HtmlResponse(r.url, body=b"", request=r) for r in requests]

    def drive(coro: object) -> None:
        with contextlib.suppress(StopIteration):
            coro.send(None)  # type: ignore[attr-defined]

    runs = []
    for _ in range(7):
        begin = time.perf_counter_ns()
        for request, response in zip(requests, responses, strict=True):
            drive(robots.process_request(request))
            drive(polite.process_request(request))
            polite.process_response(request, response)
        runs.append((time.perf_counter_ns() - begin) / n)
    print(
        f"robots.txt + politeness middlewares, no shared state: "
        f"{statistics.median(runs):.0f} ns per request (median of 7 x {n})"
    )


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "gaps"
    if what == "gaps":
        gaps(usual=sys.argv[2:] == ["usual"])
    else:
        overhead()
