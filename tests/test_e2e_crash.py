"""Kill the crawl at any moment, run the same command again: nothing lost.

``scrapy crawl`` subprocesses against a generated site (a binary tree of
127 pages), killed with SIGKILL at several moments or stopped with a double
Ctrl-C, then run again until one run finishes. The moments are the
server's: it kills the crawl itself when it receives the request that marks
one (the 3rd page, the first page of a new round, …), before answering it —
no sleeps, no polling, the same moment on a fast or a loaded machine.
Asserted on what the server served, the files on disk and the exit status:
every page once in pages.jsonl, every line valid JSON, every page served,
none more than twice (only what was in flight, or done but not committed,
at a kill is fetched again).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING

from tests.support.cli import ROOT, run_crawl, scrapy_command, scrapy_env
from tests.support.endkill import EXTENSIONS_WITH_KILLER
from tests.support.server import Page, html
from tests.support.site import Node, Site
from webspider.frontier.state import FORMAT_VERSION

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tests.support.server import SeenRequest, TestServer

PAGES = 127  # a binary tree of depth 6
STATE = ".webspider-state.sqlite3"
#: with max_depth=2, the pages of each round (depths 0-2, 3-5, 6)
ROUNDS = [
    {i for i in range(PAGES) if lo <= (i + 1).bit_length() - 1 <= hi}
    for lo, hi in ((0, 2), (3, 5), (6, 6))
]


def path_of(i: int) -> str:
    return "/" if i == 0 else f"/p/{i}"


def tree(delay: float = 0.0) -> Site:
    site = Site()
    for i in range(PAGES):
        children = [path_of(c) for c in (2 * i + 1, 2 * i + 2) if c < PAGES]
        site[path_of(i)] = Node([*children, "/"], delay=delay)
    return site


class Moments:
    """Signals the crawl from the server, when a request arrives for which
    ``when(path, pages requested so far)`` holds (before answering it)."""

    def __init__(self, server: TestServer) -> None:
        self.server = server
        self.pid = 0
        self.when: Callable[[str, int], bool] | None = None
        self.signal = signal.SIGKILL
        self.sent = threading.Event()
        #: answered only once set (a crawl kept running while it is unset)
        self.gate = threading.Event()
        self.gate.set()
        self.gated: set[str] = set()
        self._lock = threading.Lock()
        for path, route in list(server.routes.items()):
            if isinstance(route, Page):
                server.routes[path] = self._route(path, route)

    def _route(self, path: str, page: Page) -> Callable[[SeenRequest], Page]:
        def answer(seen: SeenRequest) -> Page:
            with self._lock:
                when = self.when
                if when is not None and when(path, len(self.server.requested_pages())):
                    self.when = None
                    os.kill(self.pid, self.signal)
                    self.sent.set()
            if path in self.gated:
                self.gate.wait(60)
            return page

        return answer

    def arm(
        self,
        crawl: subprocess.Popen[str],
        when: Callable[[str, int], bool],
        sig: signal.Signals = signal.SIGKILL,
    ) -> None:
        self.sent.clear()
        self.pid, self.signal, self.when = crawl.pid, sig, when


def nth_page(n: int) -> Callable[[str, int], bool]:
    return lambda path, served: served >= n


def first_of(pages: set[int]) -> Callable[[str, int], bool]:
    paths = {path_of(i) for i in pages}
    return lambda path, served: path in paths


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


def killed_at(
    moments: Moments,
    server: TestServer,
    out: Path,
    when: Callable[[str, int], bool],
    *extra: str,
) -> None:
    """A crawl, killed by the server at the moment ``when`` marks."""
    crawl = start(server, out, *extra)
    moments.arm(crawl, when)
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == -signal.SIGKILL, log  # killed, not finished
    assert (out / STATE).exists()


def finish(server: TestServer, out: Path, *extra: str) -> str:
    crawl = start(server, out, *extra)
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == 0, log
    assert "Spider closed (finished)" in log, log
    return log


#: requests a stop may cost again: those in flight (CONCURRENT_REQUESTS=4,
#: and a few the engine holds) and those done since the last commit (a
#: commit is due after 32 acknowledgements: WEBSPIDER_STATE_COMMIT_PAGES)
REFETCH_PER_STOP = 4 + 4 + 32


def assert_complete(server: TestServer, out: Path, site: Site, stops: int = 1) -> None:
    """Every page once in pages.jsonl; each stop cost at most one more fetch
    of a page (one in flight or done but not committed at that stop), and at
    most REFETCH_PER_STOP in all."""
    served = Counter(server.requested_pages())
    assert set(served) == set(site)  # no URL lost
    assert max(served.values()) <= 1 + stops, served.most_common(5)
    refetched = sum(served.values()) - len(served)
    assert refetched <= stops * REFETCH_PER_STOP, served.most_common(5)
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    urls = [json.loads(line)["url"] for line in lines]  # every line valid JSON
    assert len(urls) == len(set(urls)), Counter(urls).most_common(3)
    assert {u[len(server.base) :] for u in urls} == set(site)


def test_kill_9_at_several_moments_then_resume_then_run_again(tmp_path, server):
    site = tree(delay=0.005)
    site.serve(server)
    moments = Moments(server)
    out = tmp_path / "out"
    for n in (3, 50, 110):  # early, mid-crawl, late
        killed_at(moments, server, out, nth_page(n))
    finish(server, out)
    assert_complete(server, out, site, stops=3)
    # finished: the same command again is a new crawl, not a resumed one
    server.clear()
    log = finish(server, out)
    assert "Resuming" not in log
    assert Counter(server.requested_pages()) == Counter(set(site))
    assert_complete(server, out, site)


def test_the_commit_cadence_bounds_what_a_kill_fetches_again(tmp_path, server):
    """WEBSPIDER_STATE_COMMIT_PAGES: the state commits every that many pages
    done (the interval set out of reach), so a kill fetches again what was
    in flight and at most that many pages done; with 0 the count commits
    nothing, and every page done before the kill is fetched again."""
    site = tree(delay=0.005)
    site.serve(server)
    moments = Moments(server)
    by_time = ("-s", "WEBSPIDER_STATE_COMMIT_INTERVAL=3600")
    every_8 = (*by_time, "-s", "WEBSPIDER_STATE_COMMIT_PAGES=8")
    out = tmp_path / "every-8"
    killed_at(moments, server, out, nth_page(100), *every_8)
    finish(server, out, *every_8)
    again = [p for p, n in Counter(server.requested_pages()).items() if n > 1]
    assert 0 < len(again) <= 4 + 4 + 8, sorted(again)
    assert_complete(server, out, site)

    server.clear()
    time_only = (*by_time, "-s", "WEBSPIDER_STATE_COMMIT_PAGES=0")
    out = tmp_path / "time-only"
    killed_at(moments, server, out, nth_page(100), *time_only)
    before = set(server.requested_pages())
    assert len(before) >= 100
    finish(server, out, *time_only)
    served = Counter(server.requested_pages())
    assert {p for p, n in served.items() if n > 1} == before  # none committed
    assert set(served) == set(site)
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    urls = [json.loads(line)["url"][len(server.base) :] for line in lines]
    assert sorted(urls) == sorted(site)  # the lines of the kill cut back


def test_kill_9_after_a_redirect_is_done_then_resume(tmp_path, server):
    # the start page redirects to a page linked from nowhere else: once the
    # redirect is done (committed), the crawl state alone knows its target
    site = tree()
    site["/"].links.append("/redirect/301?to=/r")
    site["/r"] = Node([])
    site.serve(server)
    moments = Moments(server)
    moments.gated = {"/r"}  # requested, never answered before the kill
    moments.gate.clear()
    out = tmp_path / "out"
    # no level barrier: the other pages go on while the target is held
    extra = ("-s", "WEBSPIDER_DEPTH_STRICT=0")
    try:
        # 70 pages on, the redirect's ack is committed (every 32 acks at most)
        killed_at(moments, server, out, nth_page(70), *extra)
    finally:
        moments.gate.set()
    assert "/r" in server.requested_pages()
    server.clear()
    finish(server, out, *extra)
    assert "/r" in server.requested_pages()  # fetched again, not lost
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    urls = [json.loads(line)["url"][len(server.base) :] for line in lines]
    assert sorted(urls) == sorted(site)


def test_kill_9_around_round_changes_then_resume(tmp_path, server):
    # max_depth=2: rounds of 7, 56 and 64 pages, each round's start URLs
    # deferred by the one before
    site = tree(delay=0.005)
    site.serve(server)
    moments = Moments(server)
    out = tmp_path / "out"
    extra = ("-a", "max_depth=2")
    # the last page of round 0 requested: killed while the round ends, its
    # deferred URLs recorded but not yet the next round's queue
    killed_at(moments, server, out, nth_page(len(ROUNDS[0])), *extra)
    # the first request of round 1: killed right after the round change
    # committed, with round 1's first leases out
    killed_at(moments, server, out, first_of(ROUNDS[1]), *extra)
    killed_at(moments, server, out, first_of(ROUNDS[2]), *extra)
    log = finish(server, out, *extra)
    assert "Resuming round 2" in log, log
    assert_complete(server, out, site, stops=3)
    # each URL counted once over the kills, however it was queued (a
    # deferred one when its round started, in the round change's commit)
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["urls_seen"] == len(site)


def anchored_tree(server: TestServer) -> set[str]:
    """The tree, each page with an anchor of its own and links to fragments
    of its children (one there, one missing: decided when the child is
    fetched, after the link) and of the start page (one missing: decided at
    once); robots.txt names a sitemap of five pages linked from nowhere."""
    paths = {path_of(i) for i in range(PAGES)}
    for i in range(PAGES):
        links = [
            f'<a href="{path_of(c)}#s{c}">{c}</a><a href="{path_of(c)}#no{c}">x</a>'
            for c in (2 * i + 1, 2 * i + 2)
            if c < PAGES
        ]
        links.append(f'<a href="/#s0">top</a><a href="/#gone">gone {i}</a>')
        body = f'<h1 id="s{i}">{i}</h1>' + "".join(links)
        server.add(path_of(i), Page(html(body), delay=0.005))
    extra = [f"/extra/{n}" for n in range(5)]
    for path in extra:
        server.add(path, Page(html("listed in the sitemap")))
    locs = "".join(f"<url><loc>{server.url(p)}</loc></url>" for p in extra)
    server.add(
        "/sitemap.xml",
        Page(
            '<?xml version="1.0"?><urlset xmlns='
            f'"http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>',
            content_type="application/xml",
        ),
    )
    server.add(
        "/robots.txt",
        Page(f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain"),
    )
    return paths | set(extra)


def test_kill_9_with_missing_anchors_and_sitemaps_then_resume(tmp_path, server):
    """The missing anchors and the sitemaps read are in the crawl state: a
    killed and resumed crawl reports the anchors an uninterrupted one does
    (those found before the kill too) and does not read the sitemap again."""
    paths = anchored_tree(server)
    extra = ("-a", "check_anchors=1", "-a", "sitemaps=1")
    reference = tmp_path / "reference"
    finish(server, reference, *extra)
    server.clear()
    moments = Moments(server)
    out = tmp_path / "out"
    # 60 pages on, the sitemap read and what the first pages found are
    # committed (every 32 acks at most)
    killed_at(moments, server, out, nth_page(60), *extra)
    assert "/sitemap.xml" in server.requested_pages()
    finish(server, out, *extra)
    assert server.requested_pages().count("/sitemap.xml") == 1
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    urls = [json.loads(line)["url"][len(server.base) :] for line in lines]
    assert sorted(urls) == sorted(paths)
    got = (out / "broken-links.jsonl").read_text("utf-8").splitlines()
    expected = (reference / "broken-links.jsonl").read_text("utf-8").splitlines()
    # "/#gone", and every page but the start page ("#no<i>")
    assert len(expected) == PAGES
    assert json.loads(expected[0])["referrer_count"] == PAGES  # "/#gone"
    assert got == expected
    summary = json.loads((out / "summary.json").read_text())
    assert summary["broken"]["missing_anchors"] == PAGES


def test_kill_9_keeps_every_broken_links_referrer_and_text(tmp_path, server):
    """The links waiting for a target keep their referrer and text through
    kills (format 10: a text met again is kept once, in the state's
    transaction; a resumed process meets every text anew): the broken
    links' report of a killed and resumed crawl, with the mirror, is the
    uninterrupted crawl's, each referrer with its text."""
    for i in range(PAGES):
        links = [path_of(c) for c in (2 * i + 1, 2 * i + 2) if c < PAGES]
        body = "".join(f'<a href="{u}">{u}</a>' for u in links)
        # linked from most pages with one text, from some with one of three,
        # and from four pages each with texts of their own
        if i >= 3:
            body += '<a href="/gone/nav">Gone, a navigation link</a>'
        if i >= 15:
            body += f'<a href="/gone/deep{i % 4}">deep link {i % 3}</a>'
        body += f'<a href="/gone/own{i // 4}">only page {i} says this</a>'
        server.add(path_of(i), Page(html(body), delay=0.005))
    extra = ("-a", "mirror=1")
    reference = tmp_path / "reference"
    finish(server, reference, *extra)
    expected = (reference / "broken-links.jsonl").read_text("utf-8").splitlines()
    records = {
        json.loads(line)["url"][len(server.base) :]: json.loads(line)
        for line in expected
    }
    assert len(records) == 1 + 4 + (PAGES + 3) // 4
    nav = records["/gone/nav"]
    assert nav["referrer_count"] == len(nav["referrers"]) == PAGES - 3
    assert {r["text"] for r in nav["referrers"]} == {"Gone, a navigation link"}
    assert {r["text"] for r in records["/gone/deep1"]["referrers"]} == {
        f"deep link {n}" for n in range(3)
    }
    assert [r["text"] for r in records["/gone/own5"]["referrers"]] == [
        f"only page {i} says this" for i in sorted(range(20, 24), key=path_of)
    ]
    server.clear()
    moments = Moments(server)
    out = tmp_path / "out"
    for n in (12, 45, 90):
        killed_at(moments, server, out, nth_page(n), *extra)
    finish(server, out, *extra)
    got = (out / "broken-links.jsonl").read_text("utf-8").splitlines()
    assert got == expected


def test_second_crawl_refused_then_double_ctrl_c_then_resume(tmp_path, server):
    site = tree()
    site.serve(server)
    moments = Moments(server)
    out = tmp_path / "out"
    # the first crawl is held at one page while a second one tries the state
    moments.gated = {path_of(5)}
    moments.gate.clear()
    first = start(server, out)
    try:
        # the first crawl holds the state once it asks for pages
        deadline = time.monotonic() + 60
        while path_of(5) not in server.requested_pages():
            assert time.monotonic() < deadline, "the first crawl did not start"
            time.sleep(0.05)
        second = run_crawl(*command(server, out)[7:])
        assert second.returncode == 2, second.stderr
        [line] = second.stderr.strip().splitlines()
        assert line.startswith("webspider: error: ")
        assert str(out / STATE) in line
        assert "another crawl is running" in line
    finally:
        moments.gate.set()
    # then Ctrl-C twice, quickly: the second one forces the stop
    moments.arm(first, nth_page(60), signal.SIGINT)
    assert moments.sent.wait(60), "the crawl did not get that far"
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=60)
    assert len(set(server.requested_pages())) < PAGES
    log = finish(server, out)
    assert "Resuming round 0" in log
    assert_complete(server, out, site)


def test_other_start_urls_an_older_format_and_a_corrupt_state_are_refused(
    tmp_path, server
):
    site = tree()
    site.serve(server)
    moments = Moments(server)
    out = tmp_path / "out"
    killed_at(moments, server, out, nth_page(20))
    args = command(server, out)[7:]
    other = list(args)
    other[other.index(f"url={server.url('/')}")] = f"url={server.url('/p/1')}"
    refused = run_crawl(*other)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert "other start URLs or scope" in line and "restart=1" in line
    # a state of the format before (format 9: a waiting link's repeated
    # text inline each time it comes): never read as today's
    served = len(server.requested_pages())
    old = FORMAT_VERSION - 1
    with sqlite3.connect(out / STATE) as db:
        db.execute("UPDATE meta SET value = ? WHERE name = 'format'", (str(old),))
    db.close()
    refused = run_crawl(*args)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    expected = (
        f"crawl state of format {old}, this webspider reads format {FORMAT_VERSION}"
    )
    assert expected in line, line
    assert "restart=1" in line
    assert len(server.requested_pages()) == served  # nothing crawled
    (out / STATE).write_bytes(b"\0garbage" * 512)
    refused = run_crawl(*args)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert str(out / STATE) in line and "restart=1" in line
    server.clear()
    finish(server, out, "-a", "restart=1")
    assert Counter(server.requested_pages()) == Counter(set(site))
    assert_complete(server, out, site)


def test_another_depth_cap_and_a_pages_file_written_over_are_refused(tmp_path, server):
    """A crawl with its state in JOBDIR, killed; the same command with another
    depth cap is refused (what is queued was capped at the first one); then
    another crawl writes into the same output (its own state there) and
    replaces pages.jsonl: the killed crawl's command is refused, not run on
    the other crawl's file with its own pages lost (exit 0 before)."""
    site = tree()
    site.serve(server)
    moments = Moments(server)
    out = tmp_path / "out"
    job = ("-s", f"JOBDIR={tmp_path / 'job'}")
    crawl = start(server, out, *job)
    moments.arm(crawl, nth_page(60))
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == -signal.SIGKILL, log
    committed = (out / "pages.jsonl").read_bytes()
    assert committed  # 60 pages served: committed every 32 done
    args = command(server, out, *job)[7:]
    refused = run_crawl(*args, "-a", "max_depth=1")
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert "another depth cap (max_depth=none, given 1)" in line, line
    assert "restart=1" in line
    # the pages so far were written to no mirror: continuing with one would
    # leave them out of it (exit 0 before, and half a mirror)
    refused = run_crawl(*args, "-a", "mirror=1")
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert "another mirror (mirror=0, given mirror)" in line, line
    assert not (out / "mirror").exists()  # the refusal made no folder
    # another crawl into the output, from another page, with no JOBDIR
    other = list(command(server, out)[7:])
    other[other.index(f"url={server.url('/')}")] = f"url={server.url('/p/2')}"
    done = run_crawl(*other)
    assert done.returncode == 0, done.stderr
    assert (out / "pages.jsonl").read_bytes() != committed
    served = len(server.requested_pages())
    refused = run_crawl(*args)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert str(out / "pages.jsonl") in line and "not the file this crawl wrote" in line
    assert len(server.requested_pages()) == served  # nothing crawled
    server.clear()
    restarted = finish(server, out, *job, "-a", "restart=1")
    assert "Starting over (restart=1): the crawl state" in restarted
    assert Counter(server.requested_pages()) == Counter(set(site))
    assert_complete(server, out, site)


def test_a_kill_after_the_last_commit_leaves_the_finished_crawls_files(
    tmp_path, server
):
    """Killed once the state's last commit has marked the crawl finished
    (spider_closed's first receiver): the next run of the same command is a
    new crawl, so summary.json, report.html and deferred.jsonl must already
    be this crawl's. They were written after that commit: a short crawl left
    no summary.json nor report.html (their 60 s rewrite never came), and no
    deferred.jsonl."""
    site = tree()
    site.serve(server)
    out = tmp_path / "out"
    killer = f"EXTENSIONS={EXTENSIONS_WITH_KILLER}"
    crawl = start(server, out, "-a", "max_depth=2", "-a", "max_rounds=0", "-s", killer)
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == -signal.SIGKILL, log
    assert "Spider closed" not in log  # killed before Scrapy's last line
    round_0 = {path_of(i) for i in ROUNDS[0]}
    assert set(server.requested_pages()) == round_0
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["finish_reason"] == "finished"
    assert summary["pages"] == len(round_0)
    assert summary["deferred_remaining"] == 8  # depth 3: round 1's first level
    assert "finished" in (out / "report.html").read_text("utf-8")
    deferred = (out / "deferred.jsonl").read_text("utf-8").splitlines()
    assert {server.url(path_of(i)) for i in range(7, 15)} == {
        json.loads(line)["url"] for line in deferred
    }
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    assert sorted(json.loads(line)["url"] for line in lines) == sorted(
        server.url(p) for p in round_0
    )
