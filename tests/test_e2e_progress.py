"""End to end: live progress on a terminal (through a pseudo-terminal) and in
the log, and ``scrapy crawl`` failing on broken internal links."""

from __future__ import annotations

import fcntl
import logging
import os
import pty
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest
from scrapy.extensions.logstats import LogStats
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.cli import ROOT, scrapy_command, scrapy_env
from tests.support.crawl import crawl
from tests.support.server import Page, TestServer, html
from webspider.commands.crawl import EXIT_BROKEN

pytestmark = pytest.mark.e2e


def scrapy_crawl(tmp_path: Path, *args: str) -> list[str]:
    return scrapy_command(
        "-s", f"WEBSPIDER_OUTPUT={tmp_path / 'out'}", "-s", "RETRY_TIMES=0", *args
    )


def child_env() -> dict[str, str]:
    env = scrapy_env()
    env.pop("COLUMNS", None)  # the pseudo-terminal's size is what counts
    return env


def run_in_pty(
    args: list[str], columns: int = 120, timeout: float = 50
) -> tuple[int, str]:
    """Run ``args`` with a pseudo-terminal as stdout and stderr."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        args, cwd=ROOT, env=child_env(), stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    rc = proc.wait(timeout=10)
    return rc, b"".join(chunks).decode("utf-8", "replace")


def screen(output: str) -> tuple[list[str], str]:
    """What a terminal shows: (lines scrolled up, the line the cursor is on).
    Understands what the status line uses: CR, LF and erase-to-end (ESC[K)."""
    lines: list[str] = []
    line: list[str] = []
    col = 0
    i = 0
    while i < len(output):
        ch = output[i]
        if output.startswith("\x1b[K", i):
            del line[col:]
            i += 3
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("".join(line))
            line, col = [], 0
        else:
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
        i += 1
    return lines, "".join(line)


def slow_site(server: TestServer) -> None:
    links = "".join(f'<a href="/slow/{i}">slow {i}</a>' for i in range(3))
    server.add("/", html(links + '<a href="/gone">gone</a>', title="Home"))
    for i in range(3):
        server.add(f"/slow/{i}", Page(html("slow"), delay=0.8))


@pytest.mark.parametrize("columns", [120, 50])
def test_progress_line_on_a_terminal(tmp_path, server, columns):
    slow_site(server)
    rc, output = run_in_pty(
        columns=columns,
        args=scrapy_crawl(
            tmp_path,
            "-a",
            f"start_urls={server.url('/')}",
            "-s",
            "WEBSPIDER_PROGRESS_REFRESH=0.2",
            "-s",
            "CONCURRENT_REQUESTS_PER_DOMAIN=1",
        ),
    )
    assert rc == 0, output
    # the line was drawn several times, in place
    assert output.count("\rpages ") >= 3, output
    status = [part.split("\x1b[K")[0] for part in output.split("\rpages ")[1:]]
    # cut to the terminal's width: a wrapped line could not be redrawn in place
    assert all(len("pages " + line) < columns for line in status), status
    if columns > 100:
        assert "pages/s" in output and "broken" in output and "in flight" in output
    lines, current = screen(output)
    # ... never scrolled into the log, and erased at the end
    assert not [line for line in lines if line.startswith("pages ")], lines
    assert current == ""
    assert any("Broken links: 1 (1 internal" in line for line in lines), lines
    # LogStats is replaced, not duplicated
    assert not any("Crawled 0 pages (at" in line for line in lines)


@deferred_f_from_coro_f
async def test_progress_in_the_log(tmp_path, server, caplog):
    slow_site(server)
    # /gone first, so the slow pages after it leave time for a line that counts it
    links = "".join(f'<a href="/slow/{i}">slow {i}</a>' for i in range(3))
    server.add("/", html('<a href="/gone">gone</a>' + links, title="Home"))
    caplog.set_level(logging.INFO)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={
            "WEBSPIDER_PROGRESS": "log",
            "WEBSPIDER_PROGRESS_INTERVAL": 0.2,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        },
    )
    progress = [
        r.getMessage()
        for r in caplog.records
        if r.name == "webspider.reports.progressline"
    ]
    assert len(progress) >= 3, progress
    assert progress[0].startswith("Progress: ")
    assert "pending" in progress[0] and "pages/s" in progress[0]
    assert "1 broken" in progress[-1]
    assert result.crawler.get_extension(LogStats) is None


def test_fail_on_broken_exit_status(tmp_path, server):
    server.add("/", html('<a href="/ok">ok</a><a href="/gone">gone</a>', "Home"))
    server.add("/ok", html("ok", title="OK"))
    start = f"start_urls={server.url('/')}"
    args = scrapy_crawl(
        tmp_path, "-a", start, "-s", "WEBSPIDER_PROGRESS=off", "-a", "fail_on_broken=1"
    )

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args,
            cwd=ROOT,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=50,
            check=False,
        )

    failing = run()
    assert failing.returncode == EXIT_BROKEN, failing.stderr
    assert "/gone" in server.requested()
    assert (tmp_path / "out" / "broken-links.jsonl").read_text("utf-8").count("\n") == 1

    server.routes.pop("/")
    server.add("/", html('<a href="/ok">ok</a>', "Home"))
    server.clear()
    passing = run()
    assert passing.returncode == 0, passing.stderr
    assert "/ok" in server.requested() and "/gone" not in server.requested()
    assert (tmp_path / "out" / "broken-links.jsonl").read_text("utf-8") == ""


def _figures(message: str) -> dict[str, float]:
    """``{"pages": 12, "pending": 3, …, "pages/s": 4.5}`` of a progress line."""
    figures = {}
    for part in message.removeprefix("Progress: ").split(", ")[:-1]:
        value, _, name = part.partition(" ")
        figures[name] = float(value)
    return figures


@deferred_f_from_coro_f
async def test_progress_of_a_resumed_crawl(tmp_path, server, caplog):
    """After a resume, pending counts the queue the earlier run left, and the
    first line's pages/s only this run's pages, not the earlier run's."""
    server.add("/", html("".join(f'<a href="/p/{i}">{i}</a>' for i in range(30))))
    for i in range(30):
        server.add(f"/p/{i}", Page(html(f"page {i}"), delay=0.15))
    settings = {"CONCURRENT_REQUESTS": 1, "WEBSPIDER_PROGRESS": "off"}
    first = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={**settings, "CLOSESPIDER_PAGECOUNT": 8},
    )
    assert first.stats["finish_reason"] == "closespider_pagecount"
    caplog.set_level(logging.INFO)
    second = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={
            **settings,
            "WEBSPIDER_PROGRESS": "log",
            "WEBSPIDER_PROGRESS_INTERVAL": 0.5,
        },
    )
    assert second.stats["finish_reason"] == "finished"
    assert len(server.requested_pages()) == 31  # each page once, both runs
    lines = [
        _figures(r.getMessage())
        for r in caplog.records
        if r.name == "webspider.reports.progressline"
    ]
    assert len(lines) >= 3, lines
    line = lines[0]
    # whole-crawl pages: the earlier run's and this one's
    assert line["pages"] >= 8, line
    # the earlier run's queue is pending: every page of the site is
    # fetched, waiting, or on its way
    assert line["pages"] + line["pending"] + line["in flight"] >= 30, line
    # one request at a time, 0.15 s each: at most ~7 pages a second
    assert all(figures["pages/s"] < 10 for figures in lines), lines
