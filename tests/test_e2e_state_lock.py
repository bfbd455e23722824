"""Two crawls started at the same moment on one output folder: exactly one
runs, the other is refused with one line and exit 2 — never a traceback
(the state's lock is taken when the crawl command checks the state, and
kept until the crawl ends; see webspider.frontier.resume)."""

from __future__ import annotations

import subprocess
import threading

from tests.support.cli import ROOT, scrapy_command, scrapy_env
from tests.support.server import Page, html


def race(args: list[str], gate: threading.Event) -> list[tuple[int, str]]:
    """Start two crawls at once; (exit status, stderr) of each. ``gate`` is
    set as soon as one has ended."""
    crawls = [
        subprocess.Popen(
            args,
            cwd=ROOT,
            env=scrapy_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results: list[tuple[int, str]] = [(0, "")] * 2

    def wait(i: int) -> None:
        _, err = crawls[i].communicate(timeout=120)
        results[i] = (crawls[i].returncode, err)
        gate.set()

    waiters = [threading.Thread(target=wait, args=(i,)) for i in range(2)]
    for waiter in waiters:
        waiter.start()
    for waiter in waiters:
        waiter.join()
    return results


def test_two_crawls_started_at_once_one_is_refused(tmp_path, server):
    gate = threading.Event()

    def held(seen: object) -> Page:
        # the crawl that runs stays running until the other one has ended
        gate.wait(60)
        return Page(html('<a href="/a">a</a>'))

    server.add("/", held)
    server.add("/a", html("a"))
    for attempt in range(4):
        gate.clear()
        out = tmp_path / f"out{attempt}"
        args = scrapy_command(
            *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
            *("-a", "mirror=0", "-s", "WEBSPIDER_PROGRESS=off"),
        )
        results = race(args, gate)
        codes = sorted(code for code, _ in results)
        assert codes == [0, 2], results
        refused = next(err for code, err in results if code == 2)
        assert "Traceback" not in refused, refused
        [line] = refused.strip().splitlines()
        assert line.startswith("webspider: error: "), line
        assert "another crawl is running" in line, line
        ran = next(err for code, err in results if code == 0)
        assert "Spider closed (finished)" in ran
