"""Many workers, one crawl: ``scrapy crawl`` processes sharing the crawl
state on a real redis-server (tests/support/redis_server.py), against a
local site that logs every request.

Asserted on what the server served (every page once, except the requests
of a killed worker whose leases expired), on the workers' files (the union
of their pages.jsonl is the site, each line valid JSON) and on the exit
status (every worker 0, reason finished).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import signal
import socket
import subprocess
import time
from collections import Counter
from typing import TYPE_CHECKING

import redis

from tests.support.cli import run_crawl, start_crawl
from tests.support.redis_server import RedisServer
from tests.support.site import Node, Site
from webspider.frontier.redisscripts import ADD

if TYPE_CHECKING:
    from pathlib import Path

    from tests.support.server import TestServer

PAGES = 255  # a binary tree of depth 7


def tree(delay: float = 0.02) -> Site:
    site = Site()
    for i in range(PAGES):
        path = "/" if i == 0 else f"/p/{i}"
        children = [f"/p/{c}" for c in (2 * i + 1, 2 * i + 2) if c < PAGES]
        site[path] = Node([*children, "/"], delay=delay)
    return site


def start(
    server: TestServer, out: Path, state_url: str, *extra: str
) -> subprocess.Popen[str]:
    return start_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-a", "mirror=0", "-s", "CONCURRENT_REQUESTS=4"),
        *("-s", "WEBSPIDER_PROGRESS=off", "-s", "RETRY_TIMES=0"),
        *("-s", f"WEBSPIDER_STATE={state_url}"),
        *("-s", "WEBSPIDER_STATE_LEASE_TIMEOUT=2"),
        *extra,
    )


def finished(worker: subprocess.Popen[str]) -> str:
    log = worker.communicate(timeout=180)[0]
    assert worker.returncode == 0, log[-3000:]
    assert "Spider closed (finished)" in log, log[-3000:]
    return log


def pages_of(out: Path) -> Counter[str]:
    """URLs in every worker's pages.jsonl (each line valid JSON; a killed
    worker's file may end in a partial line, which its next run repairs)."""
    urls: Counter[str] = Counter()
    for path in sorted(out.glob("worker-*/pages.jsonl")):
        text = path.read_text()
        lines = text.splitlines()
        if lines and not text.endswith("\n"):
            lines.pop()
        for line in lines:
            urls[json.loads(line)["url"]] += 1
    return urls


def site_urls(server: TestServer) -> set[str]:
    return {server.url("/")} | {server.url(f"/p/{i}") for i in range(1, PAGES)}


def wait_for(server: TestServer, served: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.requested_pages()) < served:
        assert time.monotonic() < deadline, "the crawl did not get that far"
        time.sleep(0.01)  # polling other processes' progress


def test_three_workers_crawl_each_page_once(server, redis_url, tmp_path):
    tree().serve(server)
    out = tmp_path / "out"
    workers = [start(server, out, redis_url) for _ in range(3)]
    for worker in workers:
        finished(worker)
    served = Counter(server.requested_pages())
    assert len(served) == PAGES
    assert max(served.values()) == 1, served.most_common(3)
    urls = pages_of(out)
    assert max(urls.values()) == 1
    # the same URLs as one process crawling alone (the embedded state)
    alone = tmp_path / "alone"
    single = run_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={alone}"),
        *("-a", "mirror=0", "-s", "WEBSPIDER_PROGRESS=off"),
        timeout=180,
    )
    assert single.returncode == 0, single.stderr[-3000:]
    lines = (alone / "pages.jsonl").read_text().splitlines()
    assert set(urls) == {json.loads(line)["url"] for line in lines} == site_urls(server)
    # each worker into its own folder, and only there
    assert not (out / "pages.jsonl").exists()
    assert {p.name for p in out.glob("worker-*") if p.is_dir()} == {
        "worker-1",
        "worker-2",
        "worker-3",
    }


def test_a_pages_new_links_are_added_in_one_round_trip(server, redis_url, tmp_path):
    # 11 pages bring 30 new links each (300 leaves, and 10 pages under "/")
    site = Site()
    site["/"] = Node([f"/p/{i}" for i in range(10)])
    for i in range(10):
        leaves = [f"/q/{i}/{j}" for j in range(30)]
        site[f"/p/{i}"] = Node([*leaves, "/", *site["/"].links])
        for leaf in leaves:
            site[leaf] = Node(["/", f"/p/{i}"])
    site.serve(server)
    r = redis.Redis.from_url(redis_url)
    # every command the server runs is logged, with its arguments
    r.config_set("slowlog-log-slower-than", 0)
    r.config_set("slowlog-max-len", 100000)
    r.slowlog_reset()
    finished(start(server, tmp_path / "out", redis_url))
    assert sum(pages_of(tmp_path / "out").values()) == 311
    add = hashlib.sha1(ADD.encode()).hexdigest().encode()
    calls = [e["command"] for e in r.slowlog_get(100000)]
    adds = [c for c in calls if c.startswith(b"EVALSHA " + add)]
    # A page's links go to the scheduler in one reactor turn or a few: Scrapy
    # hands a callback's output to CONCURRENT_ITEMS (8) tasks through a queue
    # of 16, so a page's 41 links (30 new) may reach it in up to three turns,
    # each sent at its end (two pages' links may share one). So up to 34
    # calls (the start URL, then the 11 pages that bring new links, up to
    # three each), not one per new link (311)
    assert 2 <= len(adds) <= 1 + 3 * 11, len(adds)
    r.config_set("slowlog-log-slower-than", 10000)


def test_a_worker_joins_late_and_junk_in_the_queue_runs_nothing(
    server, redis_url, tmp_path
):
    tree(delay=0.05).serve(server)
    out = tmp_path / "out"
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    first = start(server, out, redis_url, "-s", "WEBSPIDER_STATE_KEY=late")
    wait_for(server, 20)
    # what a scrapy-redis worker pushes: a pickled request, as a queue member
    queue = f"webspider:{{late}}:q:http://site.test:{server.port}"
    with redis.Redis.from_url(redis_url) as r:
        r.zadd(queue, {pickle.dumps(Exploit()): 0})
    second = start(server, out, redis_url, "-s", "WEBSPIDER_STATE_KEY=late")
    logs = finished(first) + finished(second)
    assert not marker.exists()
    assert "not webspider data" in logs
    served = Counter(server.requested_pages())
    assert len(served) == PAGES and max(served.values()) == 1
    assert set(pages_of(out)) == site_urls(server)


def test_a_worker_killed_loses_nothing(server, redis_url, tmp_path):
    tree(delay=0.05).serve(server)
    out = tmp_path / "out"
    workers = [start(server, out, redis_url) for _ in range(3)]
    wait_for(server, 60)
    victim = next(w for w in workers if w.poll() is None)
    victim.send_signal(signal.SIGKILL)
    victim.communicate()  # reaped, its pipe closed
    for worker in workers:
        if worker is not victim:
            finished(worker)
    served = Counter(server.requested_pages())
    assert len(served) == PAGES
    # fetched twice: only what the killed worker held (leased or in flight)
    twice = [path for path, n in served.items() if n > 1]
    assert max(served.values()) <= 2 and len(twice) <= 40, twice
    urls = pages_of(out)
    assert set(urls) == site_urls(server)


def test_redis_restarted_mid_crawl_loses_nothing(server, tmp_path):
    tree(delay=0.05).serve(server)
    out = tmp_path / "out"
    with RedisServer(tmp_path / "redis", appendonly=True) as redis_server:
        workers = [start(server, out, redis_server.url) for _ in range(2)]
        wait_for(server, 60)
        redis_server.stop()
        time.sleep(1.5)  # the workers find Redis gone
        redis_server.start()
        logs = [finished(worker) for worker in workers]
    served = Counter(server.requested_pages())
    errors = [line for log in logs for line in log.splitlines() if "ERROR" in line]
    assert len(served) == PAGES, errors[:5]
    assert set(pages_of(out)) == site_urls(server)
    assert any("unreachable" in log for log in logs)
    # a line when Redis goes away, not one a retry (backoff from 0.1 s: a
    # line a retry would be 4 or more in this 1.5 s outage); a worker may
    # see it go away twice (stopped, then loading its AOF)
    assert all(log.count("unreachable") <= 3 for log in logs)
    assert any("is back" in log for log in logs)


def test_a_bad_state_url_is_one_line_and_hides_the_password(tmp_path):
    result = run_crawl(
        *("-a", "url=http://site.test/", "-a", f"output={tmp_path}"),
        *("-s", "WEBSPIDER_STATE=http://user:s3cret@127.0.0.1:1/0"),
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("webspider: error: WEBSPIDER_STATE")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "s3cret" not in result.stderr + result.stdout
    assert "user:***@" in result.stderr


def test_a_redis_that_does_not_answer_at_start_is_one_line(server, tmp_path):
    """A wrong port: refused before the crawl (exit 2, one line), where the
    worker waited for it without end after one log line."""
    tree().serve(server)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={tmp_path / 'out'}"),
        *("-s", f"WEBSPIDER_STATE=redis://127.0.0.1:{port}/0"),
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("webspider: error: ")
    assert f"redis://127.0.0.1:{port}/0" in line and "does not answer" in line
    assert server.requested_pages() == []  # nothing crawled


def test_a_state_of_the_old_layout_is_refused_then_started_over(
    server, redis_url, tmp_path
):
    # format 1 kept exact keys in the seen-set: a crawl never reads it as
    # format 2's fingerprints, it stops with one line, exit 2
    tree(delay=0).serve(server)
    key = ("-s", "WEBSPIDER_STATE_KEY=old")
    r = redis.Redis.from_url(redis_url)
    r.hset("webspider:{old}:meta", mapping={"format": "1", "round": "0"})
    r.hset("webspider:{old}:s:0000", "1/p/1", "")
    worker = start(server, tmp_path / "out", redis_url, *key)
    out, _ = worker.communicate(timeout=180)
    assert worker.returncode == 2, out[-3000:]
    errors = [line for line in out.splitlines() if "webspider: error:" in line]
    assert len(errors) == 1, out[-3000:]
    assert "crawl state of format 1, this webspider reads format 5" in errors[0]
    assert "-a restart=1" in errors[0]
    assert server.requested_pages() == []
    worker = start(server, tmp_path / "out", redis_url, *key, "-a", "restart=1")
    finished(worker)
    assert set(pages_of(tmp_path / "out")) == site_urls(server)
    assert r.hget("webspider:{old}:meta", "format") == b"5"
    assert r.hget("webspider:{old}:s:0000", "1/p/1") is None  # deleted
