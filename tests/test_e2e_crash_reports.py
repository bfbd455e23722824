"""Kill the crawl, run the same command again: the same reports.

``scrapy crawl`` subprocesses against a generated site (a tree of slightly
slow pages, each linking to broken URLs that many pages share, some pages
with the same content, a robots.txt that forbids a folder), killed with
SIGKILL at several moments or stopped with a double Ctrl-C, then run again
until one run finishes. Compared with an uninterrupted crawl of the same
site: broken-links.jsonl (every referrer), the duplicates in pages.jsonl,
the counts of summary.json; and the server's log shows robots.txt fetched
once for the whole interrupted crawl (once more only when a run was killed
before its first commit).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.cli import ROOT, scrapy_command, scrapy_env
from tests.support.commitkill import EXTENSIONS_WITH_COMMIT_KILLER
from tests.support.server import Page, html

if TYPE_CHECKING:
    from pathlib import Path

    from tests.support.server import TestServer

PAGES = 127  # a binary tree of depth 6
DUPLICATES = 8
MISSING = 5
ROBOTS = "User-agent: *\nDisallow: /private/\n"


def serve(server: TestServer) -> None:
    for i in range(PAGES):
        path = "/" if i == 0 else f"/p/{i}"
        links = [f"/p/{c}" for c in (2 * i + 1, 2 * i + 2) if c < PAGES]
        links += ["/", f"/missing/{i % MISSING}", "/gone", f"/private/{i % 3}"]
        if i % 16 == 0:
            links.append(f"/dup/{i // 16}")
        anchors = "".join(f'<a href="{u}">to {u}</a>' for u in links)
        server.add(path, Page(html(anchors, title=path), delay=0.01))
    for k in range(DUPLICATES):
        # the same bytes at every /dup/<k>
        server.add(f"/dup/{k}", Page(html("<p>the same</p>", title="dup")))
    server.add("/robots.txt", Page(ROBOTS, content_type="text/plain"))


def command(server: TestServer, out: Path, *extra: str) -> list[str]:
    return scrapy_command(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-a", "mirror=0", "-s", "CONCURRENT_REQUESTS=4"),
        *("-s", "WEBSPIDER_PROGRESS=off", "-s", "RETRY_TIMES=0"),
        # a commit every 32 pages as well as every second: the moments below
        # are committed (or not) however fast the machine crawls
        *("-s", "WEBSPIDER_STATE_COMMIT_PAGES=32"),
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


def finish(server: TestServer, out: Path) -> str:
    crawl = start(server, out)
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == 0, log
    assert "Spider closed (finished)" in log, log
    return log


def reports(out: Path) -> dict[str, Any]:
    """What must not depend on how often the crawl was interrupted."""
    broken = [
        json.loads(line)
        for line in (out / "broken-links.jsonl").read_text("utf-8").splitlines()
    ]
    pages = [
        json.loads(line)
        for line in (out / "pages.jsonl").read_text("utf-8").splitlines()
    ]
    # which URL comes first among equal pages depends on timing, not on
    # interruptions: compare the groups
    duplicated = {p["url"] for p in pages if p["duplicate_of"]}
    firsts = {p["duplicate_of"] for p in pages if p["duplicate_of"]}
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    return {
        "broken": broken,
        "duplicates": (len(duplicated), duplicated | firsts),
        "summary": {
            key: summary[key]
            for key in ("pages", "urls_seen", "broken", "duplicates", "finish_reason")
        },
        "skipped": summary["skipped"]["by_reason"].get("robots"),
    }


@pytest.fixture
def uninterrupted(tmp_path_factory, server) -> dict[str, Any]:
    serve(server)
    out = tmp_path_factory.mktemp("uninterrupted")
    finish(server, out)
    expected = reports(out)
    # the site is what the test says it is
    [gone] = [r for r in expected["broken"] if r["url"].endswith("/gone")]
    assert gone["referrer_count"] == PAGES
    assert len(expected["broken"]) == MISSING + 1
    assert expected["duplicates"] == (
        DUPLICATES - 1,
        {server.url(f"/dup/{k}") for k in range(DUPLICATES)},
    )
    assert expected["summary"]["pages"] == PAGES + DUPLICATES
    server.clear()
    return expected


@pytest.mark.parametrize(
    ("moments", "robots"),
    [
        # a kill 5 pages in may come before the first commit (a second, or
        # 32 pages here): that run's robots.txt answer is lost with its pages
        pytest.param((5, 50, 110), 2, id="3-kills"),
        pytest.param((70,), 1, id="1"),
    ],
)
def test_kill_9_then_resume_gives_the_same_reports(
    tmp_path, server, uninterrupted, moments, robots
):
    out = tmp_path / "out"
    for served in moments:
        crawl = start(server, out)
        wait_for(server, served, crawl)
        crawl.send_signal(signal.SIGKILL)
        crawl.communicate()
    finish(server, out)
    assert reports(out) == uninterrupted
    assert 1 <= server.requested().count("/robots.txt") <= robots


def test_double_ctrl_c_then_resume_gives_the_same_reports(
    tmp_path, server, uninterrupted
):
    out = tmp_path / "out"
    crawl = start(server, out)
    wait_for(server, 60, crawl)
    crawl.send_signal(signal.SIGINT)
    time.sleep(0.05)
    crawl.send_signal(signal.SIGINT)
    crawl.communicate(timeout=60)
    assert len(server.requested_pages()) < PAGES
    log = finish(server, out)
    assert "Resuming round 0" in log
    assert reports(out) == uninterrupted
    assert server.requested().count("/robots.txt") == 1


def test_an_update_crawl_after_a_finished_one_starts_its_ledgers_empty(
    tmp_path, server, uninterrupted
):
    out = tmp_path / "out"
    finish(server, out)
    # the site fixed its broken links in the meantime
    server.add("/gone", Page(html("back")))
    for k in range(MISSING):
        server.add(f"/missing/{k}", Page(html(f"back {k}")))
    finish(server, out)
    assert (out / "broken-links.jsonl").read_text() == ""
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["broken"]["total"] == 0
    assert summary["pages"] == PAGES + DUPLICATES + MISSING + 1
    assert summary["duplicates"]["total"] == DUPLICATES - 1


def test_a_commit_between_a_pages_item_and_its_acknowledgement_counts_it_once(
    tmp_path, server, uninterrupted
):
    # the page's item is seen, the state commits before its lease is
    # acknowledged, kill -9: the page is fetched again, and counted once
    # (what the report kept of it waits for the acknowledgement)
    out = tmp_path / "out"
    crawl = start(
        server,
        out,
        *("-s", f"EXTENSIONS={EXTENSIONS_WITH_COMMIT_KILLER}"),
        *("-s", "TEST_KILL_AT_ITEM=/p/40"),
    )
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == -signal.SIGKILL, log
    # the pages counted, and no row a page to tell them (the embedded state)
    with sqlite3.connect(out / ".webspider-state.sqlite3") as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        if "hashed_reports_pages" in tables:
            rows = db.execute("SELECT COUNT(*) FROM hashed_reports_pages")
            assert rows.fetchone() == (0,)
        (totals,) = db.execute(
            "SELECT r.value FROM record r JOIN namespace n"
            " ON n.id = unicode(r.key) AND substr(r.key, 2) = 'pages'"
            " WHERE n.name = 'reports.totals'"
        ).fetchone()
        assert 0 < totals < PAGES
    db.close()
    finish(server, out)
    assert server.requested_pages().count("/p/40") == 2  # fetched again
    assert reports(out) == uninterrupted
