"""A crawl stopped (Ctrl-Z, SIGSTOP) past DOWNLOAD_TIMEOUT and continued:
the download its stop cut is fetched again, not reported as a broken link,
while a page that really answers too late stays a timeout
(webspider.frontier.stopped)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

from tests.support.cli import start_crawl
from tests.support.server import Page, SeenRequest, html


def test_a_download_cut_by_a_stop_is_fetched_again(tmp_path, server, http_client):
    held = threading.Event()
    release = threading.Event()

    def slow(seen: SeenRequest) -> Page:
        # the first request waits until the crawl was stopped and continued;
        # it is answered 0.5 s after the crawl runs again
        if not held.is_set():
            held.set()
            release.wait(60)
        return Page(html('<a href="/hang">h</a><a href="/after">a</a>', "Slow"))

    server.add("/", html('<a href="/slow">slow</a>', "Home"))
    server.add("/slow", slow)
    server.add("/hang", Page(html("late", "Hang"), delay=4))  # past the timeout
    server.add("/after", html("after", "After"))
    out = tmp_path / "out"
    crawl = start_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-s", "DOWNLOAD_TIMEOUT=2"),
    )
    try:
        assert held.wait(60), "the crawl did not request /slow"
        os.kill(crawl.pid, signal.SIGSTOP)
        time.sleep(4)  # twice the timeout
        os.kill(crawl.pid, signal.SIGCONT)
        time.sleep(0.5)
        release.set()
        log = crawl.communicate(timeout=120)[0]
    finally:
        release.set()
        if crawl.poll() is None:
            crawl.kill()
            crawl.communicate()
    assert crawl.returncode == 0, log[-3000:]
    assert "Traceback" not in log
    requested = server.requested_pages()
    # fetched again once; the page that is really late is not retried
    assert requested.count("/slow") == 2, requested
    assert requested.count("/hang") == 1, requested
    pages = [
        json.loads(line)["url"]
        for line in (out / "pages.jsonl").read_text().splitlines()
    ]
    assert sorted(pages) == sorted(server.url(p) for p in ("/", "/slow", "/after"))
    broken = [
        json.loads(line)
        for line in (out / "broken-links.jsonl").read_text().splitlines()
    ]
    assert [(b["url"], b["error"]) for b in broken] == [
        (server.url("/hang"), "timeout")
    ]
    assert "'webspider/downloads/stopped_retry_count': 1," in log
