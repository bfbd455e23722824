"""End-to-end: the page worker reads pages and writes the mirror, and the
output is the same as without it, even when the worker dies mid-crawl."""

import asyncio
import json
import os
import signal
import subprocess
import time

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.cli import ROOT, scrapy_command, scrapy_env, start_crawl
from tests.support.crawl import crawl
from tests.support.server import Page, html
from webspider.pageworker import client, readahead
from webspider.pageworker.client import PageWorker
from webspider.signals import crawl_state_closing
from webspider.spiders.webspider import WebSpider

pytestmark = pytest.mark.e2e

#: test crawls run without the worker unless asked (tests/support/crawl.py)
WORKER_ON = {"WEBSPIDER_PAGE_WORKER": True}


def site(server):
    """Pages that exercise what the worker does: relative, root-relative and
    absolute links, fragments, a redirect, a missing page, <base>, CSS with
    url(), a query, a UTF-16 page, one in Latin-1, and two whose Content-Type
    names no charset (a <meta charset>, and none at all). Pages that arrive
    before the worker is up are read by the crawl's own process, and these
    tests are about the worker: their spiders start once it is up
    (WorkerFirstSpider)."""
    server.add(
        "/",
        Page(
            html(
                '<a href="a.html#x">a</a> <a href="/dir/">dir</a> '
                f'<a href="{server.url("/abs")}">abs</a> <a href="/moved">moved</a> '
                '<a href="/gone.html">gone</a> <a href="/q?b=2&amp;a=1">q</a> '
                '<a href="/utf16.html">u</a> <a href="/latin.html">l</a> '
                '<a href="/meta.html">m</a> <a href="/plain.html">p</a>',
                head='<link rel="stylesheet" href="/s.css">',
            ),
            delay=1.0,
        ),
    )
    server.add("/a.html", html('<a href="/" id="x">home</a> <a href="dir/">d</a>'))
    server.add(
        "/dir/",
        html(
            '<a href="../a.html">up</a> <a href="sub/page.html">sub</a>',
            head='<base href="/dir/">',
        ),
    )
    server.add(
        "/dir/sub/page.html", html('<img src="../../img.png"> <a href="/">h</a>')
    )
    server.add("/abs", html('<a href="/a.html#y">a</a>'))
    server.add("/moved", Page(status=301, headers=[("Location", "/a.html")]))
    server.add("/q?b=2&a=1", html('<a href="/">home</a>'))
    server.add(
        "/s.css",
        Page(
            "body{background:url(img.png)} @import 'more.css';", content_type="text/css"
        ),
    )
    server.add("/more.css", Page("p{color:red}", content_type="text/css"))
    server.add("/img.png", Page(b"\x89PNG" + bytes(100), content_type="image/png"))
    server.add(
        "/utf16.html",
        Page(
            html('<a href="/a.html">é</a>').encode("utf-16"),
            content_type="text/html; charset=utf-16",
        ),
    )
    server.add(
        "/latin.html",
        Page(
            html('<a href="/caf\xe9.html">café</a>').encode("latin-1"),
            content_type="text/html; charset=latin-1",
        ),
    )
    server.add("/caf%C3%A9.html", html("café"))
    # encodings the Content-Type does not say, worked out by the worker as
    # Scrapy would (webspider.page.encoding): a <meta charset>, and none;
    # each links a page of its own (one linked from two pages would have
    # either as its referer, by the crawl's order)
    server.add("/m%C3%A9ta.html", html("méta"))
    server.add("/pl%C3%A9in.html", html("plein"))
    server.add(
        "/meta.html",
        Page(
            html(
                '<a href="/m\xe9ta.html">méta</a>',
                title="Fête",
                head='<meta charset="iso-8859-1">',
            ).encode("latin-1"),
            content_type="text/html",
        ),
    )
    server.add(
        "/plain.html",
        Page(
            html(
                '<a href="/pl\xe9in.html">café, crème brûlée, déjà vu</a> ' * 8,
                title="Fête — à la française",
            ).encode("cp1252"),
            content_type="text/html",
        ),
    )


def mirror(result):
    root = result.output / "mirror"
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def pages(result):
    text = (result.output / "pages.jsonl").read_text("utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        line.pop("fetched_at")
    return sorted(lines, key=lambda line: line["url"])


def mirror_state(result):
    """mirror-state.jsonl's lines but its header (which names the folder)."""
    return (result.output / "mirror-state.jsonl").read_text("utf-8").splitlines()[1:]


class WorkerFirstSpider(WebSpider):
    """Asks for its first page once the page worker is up (a fixed delay of
    the first page was not enough on a loaded machine: the worker took longer
    to start, and the crawl read the pages itself)."""

    async def start(self):
        worker = self.crawler.get_extension(PageWorker)
        deadline = time.monotonic() + 60
        while worker.running and not worker.ready and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert worker.ready, "the page worker did not start"
        async for request in super().start():
            yield request


@deferred_f_from_coro_f
async def test_the_worker_writes_what_the_crawl_would(tmp_path, server):
    site(server)
    on = await crawl(
        tmp_path / "on", WorkerFirstSpider, WORKER_ON, start_urls=server.url("/")
    )
    off = await crawl(
        tmp_path / "off",
        settings={"WEBSPIDER_PAGE_WORKER": False},
        start_urls=server.url("/"),
    )
    assert on.stats["webspider/page_worker/parsed_count"] >= 9
    assert on.stats["webspider/page_worker/stored_count"] >= 9
    # the fix-up (the link to /gone.html becomes absolute) was shared with it
    assert on.stats["webspider/page_worker/fixed_up_count"] >= 1
    assert not any(key.startswith("webspider/page_worker") for key in off.stats)
    files = mirror(on)
    assert files == mirror(off)
    # the index records the worker made are the ones the crawl makes
    assert mirror_state(on) == mirror_state(off)
    host = f"site.test_{server.port}"
    assert b'href="dir/index.html"' in files[f"{host}/a.html"]
    assert b"url(img.png)" in files[f"{host}/s.css"]
    assert pages(on) == pages(off)
    assert (on.output / "broken-links.jsonl").read_text() == (
        off.output / "broken-links.jsonl"
    ).read_text()
    # every page was fetched once per crawl
    gets = server.requested()
    assert gets.count("/") == gets.count("/a.html") == gets.count("/s.css") == 2


class PidSpider(WorkerFirstSpider):
    """Notes the page worker's process id once it is up."""

    pids: list[int | None] = []

    async def start(self):
        async for request in super().start():
            type(self).pids.append(self.crawler.get_extension(PageWorker).pid)
            yield request


@deferred_f_from_coro_f
async def test_a_worker_started_early_is_the_crawls(tmp_path, server):
    """The crawl command starts the worker before Scrapy builds the crawl
    (client.start_early): the crawl's PageWorker takes that process, which
    then reads the pages."""
    site(server)
    client.start_early()
    early = client._early
    assert early is not None and early.poll() is None
    result = await crawl(tmp_path, PidSpider, WORKER_ON, start_urls=server.url("/"))
    assert PidSpider.pids == [early.pid]
    assert client._early is None  # taken
    assert result.stats["webspider/page_worker/parsed_count"] >= 9
    assert early.wait(timeout=30) == 0  # stopped with the crawl


def test_a_worker_started_early_that_no_crawl_takes_ends():
    client.start_early()
    early = client._early
    assert early is not None
    client._discard_early()  # as at exit
    assert early.returncode == 0  # its stdin closed: it ended by itself
    assert client._early is None
    client._discard_early()  # nothing left: nothing done


class PausingSpider(WorkerFirstSpider):
    """Stops the page worker (SIGSTOP) when it has read a page of the second
    level (the first level's store done: the crawl's levels wait for it),
    and lets it go on once the crawl's process has read two pages itself."""

    paused = resumed = False

    def parse(self, response):
        worker = self.crawler.get_extension(PageWorker)
        cls = type(self)
        if response.meta.get("depth", 0) and not cls.paused:
            os.kill(worker.pid, signal.SIGSTOP)
            cls.paused = True
        elif (
            cls.paused
            and not cls.resumed
            and self.crawler.stats.get_value(READ_HERE, 0) >= 2
        ):
            os.kill(worker.pid, signal.SIGCONT)
            cls.resumed = True
        return super().parse(response)

    def closed(self, reason):
        if type(self).paused and not type(self).resumed:
            os.kill(self.crawler.get_extension(PageWorker).pid, signal.SIGCONT)


READ_HERE = "webspider/page_worker/read_here_count"


@deferred_f_from_coro_f
async def test_pages_that_would_wait_for_a_busy_worker_are_read_here(
    tmp_path, server, monkeypatch
):
    # CONCURRENT_REQUESTS=2: a page that arrives while the other waits for
    # the worker is read (and stored) by the crawl's process, which would
    # only wait otherwise; the output is the same. This process is never
    # "busy" here (the measure, which a loaded machine could tip, has tests
    # of its own in tests/test_pageworker_readahead.py).
    monkeypatch.setattr(readahead, "BUSY_AT_MOST", float("inf"))
    site(server)
    shared = await crawl(
        tmp_path / "shared",
        PausingSpider,
        {**WORKER_ON, "CONCURRENT_REQUESTS": 2},
        start_urls=server.url("/"),
    )
    off = await crawl(
        tmp_path / "off",
        settings={"WEBSPIDER_PAGE_WORKER": False},
        start_urls=server.url("/"),
    )
    assert PausingSpider.resumed
    stats = shared.stats
    assert stats[READ_HERE] >= 2
    assert stats["webspider/page_worker/parsed_count"] >= 2
    assert stats["webspider/page_worker/stored_count"] >= 2
    assert not any("fallback_count" in key for key in stats)
    assert mirror(shared) == mirror(off)
    assert pages(shared) == pages(off)
    assert (shared.output / "broken-links.jsonl").read_text() == (
        off.output / "broken-links.jsonl"
    ).read_text()


class StopWatchingSpider(WorkerFirstSpider):
    """Waits, when the crawl state closes (after the mirror's fix-up, before
    the state is closed and the reports written), up to 10 s for the page
    worker's process to end, and says whether it did."""

    exited_before_the_state_closed: bool | None = None

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.state_closing, signal=crawl_state_closing)
        return spider

    async def start(self):
        async for request in super().start():
            self.worker_pid = self.crawler.get_extension(PageWorker).pid
            yield request

    def state_closing(self, reason, records, commit):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if not os.waitpid(self.worker_pid, os.WNOHANG)[0]:
                    time.sleep(0.01)
                    continue
            except ChildProcessError:
                pass  # ended, and waited for by the crawl already
            type(self).exited_before_the_state_closed = True
            return
        type(self).exited_before_the_state_closed = False


@deferred_f_from_coro_f
async def test_the_worker_stops_once_the_mirrors_fix_up_is_over(tmp_path, server):
    # It has nothing left to do then; it exits on its own core while the
    # crawl writes the mirror's index and closes its state (the end of every
    # crawl is that much shorter), and the output is the same.
    site(server)
    result = await crawl(
        tmp_path, StopWatchingSpider, WORKER_ON, start_urls=server.url("/")
    )
    assert StopWatchingSpider.exited_before_the_state_closed is True
    assert result.stats["webspider/page_worker/fixed_up_count"] >= 1
    assert result.stats["finish_reason"] == "finished"
    assert (result.output / "mirror-state.jsonl").exists()


class SignallingSpider(WorkerFirstSpider):
    """Sends the page worker ``worker_signal`` when the first page it read
    arrives."""

    worker_signal = signal.SIGKILL
    signalled = False

    def parse(self, response):
        worker = self.crawler.get_extension(PageWorker)
        if worker is not None and worker.ready and not self.signalled:
            os.kill(worker.pid, self.worker_signal)
            type(self).signalled = True
        return super().parse(response)


@pytest.mark.parametrize(
    "case",
    [
        (signal.SIGKILL, WORKER_ON, "Page worker lost (it stopped)"),
        (
            signal.SIGSTOP,
            {**WORKER_ON, "WEBSPIDER_PAGE_WORKER_TIMEOUT": 3},
            "Page worker lost (no answer in 3 s)",
        ),
    ],
    ids=["killed", "stuck"],
)
@deferred_f_from_coro_f
async def test_a_dead_or_stuck_worker_loses_nothing(tmp_path, server, caplog, case):
    worker_signal, settings, logged = case
    site(server)
    spider = type("Spider", (SignallingSpider,), {"worker_signal": worker_signal})
    lost = await crawl(tmp_path / "lost", spider, settings, start_urls=server.url("/"))
    off = await crawl(
        tmp_path / "off",
        settings={"WEBSPIDER_PAGE_WORKER": False},
        start_urls=server.url("/"),
    )
    assert spider.signalled
    assert logged in caplog.text
    assert mirror(lost) == mirror(off)
    assert pages(lost) == pages(off)
    assert lost.stats.get("webspider/page_worker/stored_count", 0) == 0


@deferred_f_from_coro_f
async def test_an_index_record_that_does_not_match_the_page_is_refused(
    tmp_path, server, caplog, monkeypatch
):
    # a worker whose store answers carry a record of another size: the first
    # is refused with one line (the worker is lost), and that page and the
    # rest are stored by the crawl's process; nothing of it is recorded
    monkeypatch.setattr(client, "WORKER_MODULE", "tests.support.garbling_worker")
    site(server)
    bad = await crawl(
        tmp_path / "bad", WorkerFirstSpider, WORKER_ON, start_urls=server.url("/")
    )
    off = await crawl(
        tmp_path / "off",
        settings={"WEBSPIDER_PAGE_WORKER": False},
        start_urls=server.url("/"),
    )
    lost = [r.getMessage() for r in caplog.records if "Page worker lost" in r.message]
    assert len(lost) == 1, lost
    assert "its index record of http" in lost[0]
    assert lost[0].endswith("does not match the page): pages are read here now")
    assert bad.stats["webspider/page_worker/fallback_count/store"] == 1
    assert bad.stats.get("webspider/page_worker/stored_count", 0) == 0
    assert mirror_state(bad) == mirror_state(off)
    assert mirror(bad) == mirror(off)
    assert pages(bad) == pages(off)


def children(pid: int) -> list[int]:
    path = f"/proc/{pid}/task/{pid}/children"
    with open(path, encoding="ascii") as f:
        return [int(p) for p in f.read().split()]


def test_a_crawl_stopped_with_its_worker_keeps_the_worker(tmp_path, server):
    """Ctrl-Z (SIGSTOP) for longer than the worker's timeout, with pages
    sent to the worker, then SIGCONT: the crawl's own timer fires late, which
    says the crawl did not run either — the worker gets a new timeout and
    answers; it is not declared lost (every page after would be read in the
    crawl's process)."""
    for i in range(300):
        body = html(f'<a href="/p/{i + 1}">next</a>' * 3, f"P{i}")
        server.add(f"/p/{i}", Page(body, delay=0.05))
    server.add(
        "/", html("".join(f'<a href="/p/{i}">{i}</a>' for i in range(0, 300, 30)))
    )
    out = tmp_path / "out"
    crawl_process = start_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-s", "WEBSPIDER_PAGE_WORKER_TIMEOUT=2", "-s", "CONCURRENT_REQUESTS=2"),
    )
    try:
        deadline = time.monotonic() + 60
        while len(server.requested_pages()) < 30:
            assert time.monotonic() < deadline, "the crawl did not start"
            time.sleep(0.01)  # polling another process's progress
        (worker,) = children(crawl_process.pid)
        # the worker first, so that pages wait for it; then the crawl
        os.kill(worker, signal.SIGSTOP)
        time.sleep(0.5)
        os.kill(crawl_process.pid, signal.SIGSTOP)
        time.sleep(4)  # twice the timeout
        # the crawl first: its overdue timer runs before the worker answers
        os.kill(crawl_process.pid, signal.SIGCONT)
        time.sleep(0.5)
        os.kill(worker, signal.SIGCONT)
        log = crawl_process.communicate(timeout=120)[0]
    finally:
        if crawl_process.poll() is None:
            crawl_process.kill()
            crawl_process.communicate()
    assert crawl_process.returncode == 0, log[-3000:]
    assert "Page worker lost" not in log, log[-3000:]
    assert "page_worker/fallback_count" not in log
    assert "'webspider/page_worker/parsed_count'" in log


def test_ctrl_c_twice_does_not_reach_the_worker(tmp_path, server):
    """The worker is out of the terminal's process group: a double Ctrl-C
    (SIGINT to the group) while it still imported its modules printed
    Python's KeyboardInterrupt traceback into the crawl's output. The crawl
    stops it (its stdin closed), whether it stops gracefully or is killed."""
    for i in range(100):
        server.add(f"/p/{i}", Page(html(f'<a href="/p/{i + 1}">next</a>'), delay=0.2))
    server.add("/", html("".join(f'<a href="/p/{i}">{i}</a>' for i in range(100))))
    for stop in ("ctrl-c twice", "kill -9"):
        process = subprocess.Popen(
            scrapy_command(
                *("-a", f"url={server.url('/')}", "-a", f"output={tmp_path / stop}")
            ),
            cwd=ROOT,
            env=scrapy_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own group, as a terminal gives it
        )
        try:
            deadline = time.monotonic() + 60
            while not (found := [p for p in children(process.pid) if _is_worker(p)]):
                assert process.poll() is None, process.communicate()[0][-3000:]
                assert time.monotonic() < deadline, "no worker started"
                time.sleep(0.005)  # at once: the worker is still importing
            (worker,) = found
            assert os.getpgid(worker) != os.getpgid(process.pid)
            if stop == "kill -9":
                process.kill()
            else:
                os.killpg(process.pid, signal.SIGINT)
                time.sleep(0.1)
                os.killpg(process.pid, signal.SIGINT)
            log = process.communicate(timeout=60)[0]
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert "Traceback" not in log, log[-3000:]
        deadline = time.monotonic() + 20
        while os.path.exists(f"/proc/{worker}") and not _zombie(worker):
            assert time.monotonic() < deadline, (
                f"the worker outlived the crawl ({stop})"
            )
            time.sleep(0.05)


def _is_worker(pid: int) -> bool:
    """Whether ``pid`` runs the worker's program (so it is past the exec,
    and past what Popen does before it: its own session)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"webspider.pageworker.worker" in f.read()
    except OSError:
        return False


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
