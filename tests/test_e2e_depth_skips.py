"""A depth cap's deferrals are not skips: "Skipped" counts what the crawl did
not fetch.

A link beyond ``max_depth`` waits for a later round, which fetches it. Only
the URLs still deferred when the crawl ends (``max_rounds``, a close-spider
limit, Ctrl-C) are skipped for reason ``depth``: in the stats, summary.json,
report.html and skipped.jsonl, the same URLs as ``deferred_remaining`` and
deferred.jsonl — judged against what the server saw (the page links of the
pages it served, less those pages). The same across a stop or a kill -9 and
the run that resumes it, and on the Redis state with ``scrapy combine``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.cli import run_combine
from tests.support.crawl import crawl
from tests.support.server import Page
from tests.support.site import Node, Site
from tests.test_e2e_crash import Moments, finish, killed_at, nth_page
from tests.test_e2e_redis import start as start_worker

if TYPE_CHECKING:
    from pathlib import Path

    from tests.support.server import TestServer

pytestmark = pytest.mark.e2e

DEPTH = "webspider/skipped/url_count/depth"


def tree(levels: int, delay: float = 0.0) -> Site:
    """A binary tree, ``/`` at depth 0 and ``levels`` below it, every page
    also linking back to ``/``."""
    site = Site()
    count = 2 ** (levels + 1) - 1
    for i in range(count):
        children = [f"/p/{c}" for c in (2 * i + 1, 2 * i + 2) if c < count]
        site["/" if i == 0 else f"/p/{i}"] = Node([*children, "/"], delay=delay)
    return site


def never_fetched(site: Site, served: list[str]) -> dict[str, str]:
    """The page links of the pages the server served that it never served,
    each with the first page (in serving order) that links to it."""
    found: dict[str, str] = {}
    for page in served:
        for link in site[page].links:
            found.setdefault(link, page)
    return {link: page for link, page in found.items() if link not in set(served)}


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def depth_lines(server: TestServer, out: Path) -> dict[str, str | None]:
    """skipped.jsonl's ``depth`` lines: path → referring path."""
    base = len(server.base)
    return {
        line["url"][base:]: line["referer"][base:] if line["referer"] else None
        for line in read_lines(out / "skipped.jsonl")
        if line["reason"] == "depth"
    }


def summary_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text("utf-8"))


def assert_no_depth_skips(out: Path, stats: dict[str, Any] | None = None) -> None:
    summary = summary_of(out)
    assert "depth" not in summary["skipped"]["by_reason"], summary["skipped"]
    assert summary["deferred_remaining"] == 0
    assert [
        s for s in read_lines(out / "skipped.jsonl") if s["reason"] == "depth"
    ] == []
    # report.html's "Skipped URLs" table
    assert "<td>depth</td>" not in (out / "report.html").read_text("utf-8")
    if stats is not None:
        assert stats.get(DEPTH, 0) == 0


@deferred_f_from_coro_f
async def test_max_depth_0_fetches_everything_and_skips_nothing(tmp_path, server):
    site = tree(levels=4)
    site.serve(server)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        max_depth="0",
        settings={"WEBSPIDER_LOG_SKIPPED": True},
    )
    assert Counter(server.requested_pages()) == Counter(set(site))
    stats = result.stats
    # every page but / was deferred, and fetched in a later round
    assert stats["webspider/depth/deferred_count"] == len(site) - 1
    assert stats["webspider/depth/round_completed_count"] == 5
    assert_no_depth_skips(result.output, stats)
    assert stats.get("webspider/skipped/url_count", 0) == 0
    assert not (result.output / "deferred.jsonl").exists()


@deferred_f_from_coro_f
async def test_max_depth_1_with_other_skips_counts_only_those(tmp_path, server):
    site = tree(levels=3)
    site["/p/1"].links.append("/private/x")
    site.serve(server)
    server.add(
        "/robots.txt",
        Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
    )
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        max_depth="1",
        settings={"WEBSPIDER_LOG_SKIPPED": True},
    )
    assert set(server.requested_pages()) == set(site)
    assert result.stats["webspider/depth/deferred_count"] > 0
    assert_no_depth_skips(result.output, result.stats)
    summary = summary_of(result.output)
    assert summary["skipped"] == {"total": 1, "by_reason": {"robots": 1}}


@deferred_f_from_coro_f
async def test_max_rounds_skips_exactly_the_urls_never_fetched(tmp_path, server):
    site = tree(levels=5)
    site.serve(server)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        max_depth="0",
        max_rounds="2",
        settings={"WEBSPIDER_LOG_SKIPPED": True},
    )
    served = server.requested_pages()
    assert len(served) == 7  # depths 0-2, a round each
    left = never_fetched(site, served)
    assert len(left) == 8  # depth 3, deferred by round 2
    stats = result.stats
    assert stats[DEPTH] == len(left)
    assert stats["webspider/depth/deferred_left_count"] == len(left)
    assert stats["webspider/depth/deferred_count"] == 6 + 8
    summary = summary_of(result.output)
    assert summary["skipped"]["by_reason"] == {"depth": len(left)}
    assert summary["skipped"]["total"] == len(left)
    assert summary["deferred_remaining"] == len(left)
    # each with the page it was found on
    assert depth_lines(server, result.output) == left
    deferred = read_lines(result.output / "deferred.jsonl")
    assert {d["url"][len(server.base) :] for d in deferred} == set(left)
    report = (result.output / "report.html").read_text("utf-8")
    assert f'<td>depth</td><td class="num">{len(left)}</td>' in report


@deferred_f_from_coro_f
async def test_a_stopped_crawl_skips_its_leftovers_and_the_resumed_one_none(
    tmp_path, server
):
    site = tree(levels=4)
    site.serve(server)
    args = {"start_urls": server.url("/"), "max_depth": "0", "log_skipped": "1"}
    one_at_a_time = {"CONCURRENT_REQUESTS": 1}
    first = await crawl(
        tmp_path, settings={**one_at_a_time, "CLOSESPIDER_ITEMCOUNT": 5}, **args
    )
    assert first.stats["finish_reason"] == "closespider_itemcount"
    served = server.requested_pages()
    left = {d["url"][len(server.base) :] for d in first.exported("deferred.jsonl")}
    assert left
    assert not left & set(served)  # deferred, never fetched
    assert set(left) <= set(never_fetched(site, served))
    assert first.stats[DEPTH] == len(left)
    assert summary_of(first.output)["skipped"]["by_reason"] == {"depth": len(left)}
    assert set(depth_lines(server, first.output)) == left

    resumed = await crawl(tmp_path, settings=one_at_a_time, **args)
    assert resumed.stats["webspider/state/resumed"] == 1
    assert Counter(server.requested_pages()) == Counter(set(site))
    # the leftovers of the first part were fetched: not skipped any more
    assert_no_depth_skips(resumed.output, resumed.stats)
    assert summary_of(resumed.output)["skipped"]["total"] == 0


def test_kill_9_then_resume_skips_what_an_uninterrupted_crawl_skips(tmp_path, server):
    site = tree(levels=6, delay=0.005)
    site.serve(server)
    limited = ("-a", "max_depth=1", "-a", "max_rounds=1", "-a", "log_skipped=1")
    reference = tmp_path / "reference"
    finish(server, reference, *limited)
    served = server.requested_pages()
    left = never_fetched(site, served)
    assert len(served) == 15 and len(left) == 16  # depths 0-3; depth 4 left
    expected = summary_of(reference)
    assert expected["skipped"]["by_reason"] == {"depth": 16}
    assert depth_lines(server, reference) == left

    moments = Moments(server)
    # killed in round 1, and again as round 1 ends (its last page requested)
    for n in (8, 15):
        out = tmp_path / f"killed-at-{n}"
        server.clear()
        killed_at(moments, server, out, nth_page(n), *limited)
        finish(server, out, *limited)
        summary = summary_of(out)
        for key in ("skipped", "deferred_remaining", "pages", "urls_seen"):
            assert summary[key] == expected[key], (n, key)
        assert depth_lines(server, out) == left

    # a crawl that fetches everything, killed mid-crawl: no depth skips
    complete = ("-a", "max_depth=1", "-a", "log_skipped=1")
    out = tmp_path / "complete"
    server.clear()
    killed_at(moments, server, out, nth_page(60), *complete)
    finish(server, out, *complete)
    assert set(server.requested_pages()) == set(site)
    assert_no_depth_skips(out)


def test_redis_workers_and_combine_skip_the_leftovers_once(server, redis_url, tmp_path):
    site = tree(levels=5, delay=0.02)
    site.serve(server)
    out = tmp_path / "out"
    args = ("-a", "max_depth=1", "-a", "max_rounds=1", "-a", "log_skipped=1")
    workers = [start_worker(server, out, redis_url, *args) for _ in range(2)]
    for worker in workers:
        log = worker.communicate(timeout=180)[0]
        assert worker.returncode == 0, log[-3000:]
    served = server.requested_pages()
    assert sorted(served) == sorted(set(served))  # each once
    left = never_fetched(site, served)
    assert len(served) == 15 and len(left) == 16
    folders = sorted(p for p in out.glob("worker-*") if p.is_dir())
    assert len(folders) == 2
    for folder in folders:
        summary = summary_of(folder)
        assert summary["deferred_remaining"] == len(left)
        assert summary["skipped"]["by_reason"] == {"depth": len(left)}
        assert depth_lines(server, folder) == left

    combined = tmp_path / "combined"
    result = run_combine(str(out), "-o", str(combined))
    assert result.returncode == 0, result.stderr[-3000:]
    summary = summary_of(combined)
    # once, not once a worker
    assert summary["skipped"] == {"total": len(left), "by_reason": {"depth": 16}}
    assert summary["deferred_remaining"] == len(left)
    assert depth_lines(server, combined) == left
