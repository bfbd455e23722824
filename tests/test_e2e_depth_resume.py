"""Pause (Ctrl-C once) in the middle of round 2 with JOBDIR, resume, and
nothing is lost or fetched twice — judged from the server's request log over
both runs. ``scrapy crawl`` runs in a subprocess (it owns its reactor)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.cli import ROOT, scrapy_command, scrapy_env
from tests.support.site import Node, Site

pytestmark = pytest.mark.e2e


def binary_tree(levels: int, delay_from: int, delay: float) -> Site:
    """/ -> /0, /1 -> /0/0 ... ; every page also links back to / and its parent."""
    site = Site()
    paths = ["/"]
    for level in range(levels + 1):
        following = []
        for path in paths:
            children = (
                [f"{path.rstrip('/')}/{i}" for i in range(2)] if level < levels else []
            )
            parent = path.rsplit("/", 1)[0] or "/"
            site[path] = Node(
                [*children, "/", parent], delay=delay if level >= delay_from else 0
            )
            following += children
        paths = following
    return site


def scrapy_crawl(url: str, out: Path, jobdir: Path) -> subprocess.Popen[bytes]:
    command = scrapy_command(
        *("-a", f"start_urls={url}", "-a", "max_depth=1", "-a", f"output={out}"),
        *("-s", f"JOBDIR={jobdir}", "-s", "CONCURRENT_REQUESTS=2"),
        *("-s", "RETRY_TIMES=0", "-a", "log_skipped=1"),
        # the tree's /0/0/0/… are repeated path segments, a trap to that rule
        *("-s", "WEBSPIDER_TRAPS_MAX_REPEATS=0"),
    )
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=scrapy_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def test_pause_in_round_2_and_resume(tmp_path, server):
    # rounds with max_depth=1: levels 0-1 are round 0, 2-3 round 1, 4-5
    # round 2 (slow pages, so that the pause comes in its middle), 6 round 3
    site = binary_tree(levels=6, delay_from=4, delay=0.05)
    site.serve(server)
    predicted = site.predict(max_depth=1)
    round_2 = {p for p, (r, _) in predicted.fetched.items() if r == 2}
    out, jobdir = tmp_path / "out", tmp_path / "job"

    first = scrapy_crawl(server.url("/"), out, jobdir)
    deadline = time.monotonic() + 30
    while len(round_2.intersection(server.requested_pages())) < 6:
        assert first.poll() is None, first.communicate()[0].decode()
        assert time.monotonic() < deadline, "round 2 never began"
        time.sleep(0.02)  # polling another process's progress: nothing to wait on
    first.send_signal(signal.SIGINT)
    log1 = first.communicate(timeout=60)[0].decode()
    assert first.returncode == 130, log1  # interrupted: Ctrl-C's status
    part1 = Counter(server.requested_pages())
    assert round_2 - set(part1), "paused too late: round 2 was over"
    assert set(predicted.fetched) - set(part1), "nothing left to resume"
    # paused: what is still deferred is skipped (for now), none of it fetched
    paused = json.loads((out / "summary.json").read_text())
    left = paused["deferred_remaining"]  # (0 if no level-5 page was parsed)
    assert paused["skipped"]["by_reason"] == ({"depth": left} if left else {})
    depth_lines = [
        line["url"][len(server.base) :]
        for line in map(json.loads, (out / "skipped.jsonl").read_text().splitlines())
        if line["reason"] == "depth"
    ]
    assert len(depth_lines) == left
    assert not set(depth_lines) & set(part1)

    second = scrapy_crawl(server.url("/"), out, jobdir)
    log2 = second.communicate(timeout=60)[0].decode()
    assert second.returncode == 0, log2
    resumed = re.search(
        r"Resuming round 2 with (\d+) URLs deferred, (\d+) queued", log2
    )
    # the frontier was kept (a round's seeds are queued when it starts)
    assert resumed and int(resumed.group(1)) + int(resumed.group(2)) > 0, log2

    both = Counter(server.requested_pages())
    assert {p: n for p, n in both.items() if n > 1} == {}
    assert set(both) == set(predicted.fetched)
    items = [json.loads(x) for x in (out / "pages.jsonl").read_text().splitlines()]
    got = {
        item["url"][len(server.base) :]: (item["round"], item["depth"])
        for item in items
    }
    assert len(items) == len(got)
    assert got == predicted.fetched
    # the URLs seen over both runs, each once (the rounds' deferred ones too)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["urls_seen"] == len(predicted.fetched)
    # the pause's leftovers were fetched: neither counted nor listed as skips
    assert summary["skipped"] == {"total": 0, "by_reason": {}}
    assert summary["deferred_remaining"] == 0
    skipped = (out / "skipped.jsonl").read_text().splitlines()
    assert [line for line in skipped if '"depth"' in line] == []
