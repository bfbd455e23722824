"""Kill the crawl at any moment, run the same command again: nothing lost.

``scrapy crawl`` subprocesses against a generated site (a binary tree of a
few hundred slightly slow pages), killed with SIGKILL at several moments or
stopped with a double Ctrl-C, then run again until one run finishes.
Asserted on what the server served, the files on disk and the exit status:
every page once in pages.jsonl, every line valid JSON, every page served,
none more than twice (only what was in flight, or done but not committed,
at a kill is fetched again).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from tests.support.cli import ROOT, run_crawl, scrapy_command, scrapy_env
from tests.support.site import Node, Site

if TYPE_CHECKING:
    from pathlib import Path

    from tests.support.server import TestServer

PAGES = 255  # a binary tree of depth 7
STATE = ".webspider-state.sqlite3"


def tree(delay: float = 0.01) -> Site:
    site = Site()
    for i in range(PAGES):
        path = "/" if i == 0 else f"/p/{i}"
        children = [f"/p/{c}" for c in (2 * i + 1, 2 * i + 2) if c < PAGES]
        site[path] = Node([*children, "/"], delay=delay)
    return site


def command(server: TestServer, out: Path, *extra: str) -> list[str]:
    return scrapy_command(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-a", "mirror=0", "-s", "CONCURRENT_REQUESTS=4"),
        *("-s", "WEBSPIDER_PROGRESS=off", "-s", "RETRY_TIMES=0"),
        *extra,
    )


def start(server: TestServer, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(server, out, *extra),
        cwd=ROOT,
        env=scrapy_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(server: TestServer, served: int, crawl: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while len(server.requested_pages()) < served:
        assert crawl.poll() is None, crawl.communicate()[0]
        assert time.monotonic() < deadline, "the crawl did not get that far"
        time.sleep(0.01)  # polling another process's progress


def finish(server: TestServer, out: Path, *extra: str) -> str:
    crawl = start(server, out, *extra)
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == 0, log
    assert "Spider closed (finished)" in log, log
    return log


def assert_complete(server: TestServer, out: Path, site: Site) -> None:
    served = Counter(server.requested_pages())
    assert set(served) == set(site)  # no URL lost
    assert max(served.values()) <= 2, served.most_common(5)
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    urls = [json.loads(line)["url"] for line in lines]  # every line valid JSON
    assert len(urls) == len(set(urls)), Counter(urls).most_common(3)
    assert {u[len(server.base) :] for u in urls} == set(site)


@pytest.mark.parametrize(
    "extra",
    [pytest.param((), id="no-cap"), pytest.param(("-a", "max_depth=2"), id="rounds")],
)
def test_kill_9_at_several_moments_then_resume(tmp_path, server, extra):
    site = tree()
    site.serve(server)
    out = tmp_path / "out"
    # early, mid-crawl (with max_depth=2, rounds of 7, 56 and 192 pages: 60
    # falls at the end of round 1, next to the change to round 2), late
    for served in (3, 60, 180):
        crawl = start(server, out, *extra)
        wait_for(server, served, crawl)
        crawl.send_signal(signal.SIGKILL)
        crawl.communicate()
        assert (out / STATE).exists()
    finish(server, out, *extra)
    assert_complete(server, out, site)


def test_double_ctrl_c_then_resume(tmp_path, server):
    site = tree()
    site.serve(server)
    out = tmp_path / "out"
    crawl = start(server, out)
    wait_for(server, 80, crawl)
    crawl.send_signal(signal.SIGINT)
    time.sleep(0.05)
    crawl.send_signal(signal.SIGINT)
    crawl.communicate(timeout=60)
    assert len(server.requested_pages()) < PAGES
    log = finish(server, out)
    assert "Resuming round 0" in log
    assert_complete(server, out, site)


def test_a_finished_crawl_is_not_resumed_but_run_again(tmp_path, server):
    site = tree(delay=0)
    site.serve(server)
    out = tmp_path / "out"
    finish(server, out)
    server.clear()
    log = finish(server, out)
    assert "Resuming" not in log
    assert Counter(server.requested_pages()) == Counter(set(site))
    assert_complete(server, out, site)


def test_a_second_crawl_on_the_same_state_is_refused(tmp_path, server):
    tree(delay=0.2).serve(server)
    out = tmp_path / "out"
    first = start(server, out)
    try:
        wait_for(server, 2, first)
        second = run_crawl(*command(server, out)[7:])
        assert second.returncode == 2, second.stderr
        [line] = second.stderr.strip().splitlines()
        assert line.startswith("webspider: error: ")
        assert str(out / STATE) in line
        assert "another crawl is running" in line
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()


def test_a_corrupt_state_is_refused_and_restart_starts_over(tmp_path, server):
    site = tree(delay=0)
    site.serve(server)
    out = tmp_path / "out"
    crawl = start(server, out)
    wait_for(server, 20, crawl)
    crawl.send_signal(signal.SIGKILL)
    crawl.communicate()
    (out / STATE).write_bytes(b"\0garbage" * 512)
    refused = run_crawl(*command(server, out)[7:])
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert str(out / STATE) in line and "restart=1" in line
    server.clear()
    finish(server, out, "-a", "restart=1")
    assert Counter(server.requested_pages()) == Counter(set(site))
    assert_complete(server, out, site)


def test_other_start_urls_are_refused(tmp_path, server):
    tree(delay=0.01).serve(server)
    out = tmp_path / "out"
    crawl = start(server, out)
    wait_for(server, 20, crawl)
    crawl.send_signal(signal.SIGKILL)
    crawl.communicate()
    args = command(server, out)[7:]
    args[args.index(f"url={server.url('/')}")] = f"url={server.url('/p/1')}"
    refused = run_crawl(*args)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert "other start URLs or scope" in line and "restart=1" in line
