"""Ctrl-C while the crawl is still starting: one line, no traceback.

The moment is made certain, not guessed: a spider module (tests.support.gate)
holds the crawl's start on a FIFO while the command loads its spiders —
after Python has imported Scrapy, before Scrapy's reactor runs and installs
its own handlers. The test waits until the crawl has the FIFO open for
reading (its own non-blocking open for writing succeeds only then), sends
SIGINT, and looks at the exit status, stderr and what was served.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING

from tests.support.cli import run_crawl, scrapy_command, start_apart

if TYPE_CHECKING:
    from pathlib import Path

    from tests.support.server import TestServer


def open_for_writing_once_read(fifo: Path, process: subprocess.Popen[str]) -> int:
    """The FIFO's write end, opened once ``process`` has its read end open."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    raise AssertionError("the crawl never reached its start gate")


def test_ctrl_c_while_the_crawl_starts_prints_one_line(
    tmp_path: Path, server: TestServer
) -> None:
    server.add("/", "<a href='/a'>a</a>")
    server.add("/a", "<p>a</p>")
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    process = start_apart(
        scrapy_command(
            "-a",
            f"start_urls={server.url('/')}",
            "-a",
            f"output={out}",
            "-s",
            "SPIDER_MODULES=webspider.spiders,tests.support.gate",
        ),
        env={"TEST_START_GATE": str(fifo)},
    )
    writer = open_for_writing_once_read(fifo, process)
    try:
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        os.close(writer)
    assert process.returncode == -signal.SIGINT
    assert stderr.splitlines() == ["webspider: interrupted before the crawl started"]
    assert "Traceback" not in stdout
    assert server.log == []

    # whatever start-up had done is no obstacle: the same command crawls
    again = run_crawl("-a", f"start_urls={server.url('/')}", "-a", f"output={out}")
    assert again.returncode == 0, again.stderr[-2000:]
    assert sorted(seen.path for seen in server.log if seen.path != "/robots.txt") == [
        "/",
        "/a",
    ]
