"""End-to-end: the crawl runs on the asyncio event loop its settings name.

``scrapy crawl webspider`` in a subprocess (it installs the reactor and its
loop), with ``ASYNCIO_EVENT_LOOP`` left alone or given on the command line;
the loop the crawl ran on is what the running loop said when the spider
opened (``webspider/event_loop``, webspider.stats), read from the stats
Scrapy logs at the end. The page worker is on, so its pipes (read and
written by that loop) carry the pages, and the server saw every page.
"""

from __future__ import annotations

import asyncio
import re
import sys

import pytest
from scrapy.utils.misc import load_object

from tests.support.cli import run_crawl
from tests.support.server import Page, html
from webspider import settings as defaults

pytestmark = pytest.mark.e2e

PAGES = 40


def loop_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def default_loop() -> str:
    """The loop class a crawl with webspider's settings should run on."""
    named = getattr(defaults, "ASYNCIO_EVENT_LOOP", None)
    if named:
        return loop_name(load_object(named))
    loop = asyncio.new_event_loop()  # what asyncio makes when none is named
    try:
        return loop_name(type(loop))
    finally:
        loop.close()


def stats_value(log: str, key: str) -> str | None:
    """A string stat from the stats dump in a crawl's log."""
    found = re.search(rf"'{re.escape(key)}': '([^']*)'", log)
    return found.group(1) if found else None


def stats_count(log: str, key: str) -> int:
    found = re.search(rf"'{re.escape(key)}': (\d+)", log)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize(
    "named",
    [
        None,
        "asyncio.SelectorEventLoop",
        pytest.param(
            "uvloop.Loop",
            marks=pytest.mark.skipif(
                sys.platform == "win32", reason="uvloop has no Windows build"
            ),
        ),
    ],
)
def test_the_crawl_runs_on_the_loop_the_settings_name(
    tmp_path, server, named, http_client
):
    if named == "uvloop.Loop":
        pytest.importorskip("uvloop", reason="uvloop is not installed")
    # the first page is slow: the page worker is up before the other pages
    # come in, so that they go through its pipes
    links = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(PAGES))
    server.add("/", Page(html(links), delay=1.0))
    for i in range(PAGES):
        server.add(f"/p/{i}", html(f'<a href="/p/{(i + 1) % PAGES}">next</a>'))
    out = tmp_path / "out"
    args = ["-a", f"url={server.url('/')}", "-a", f"output={out}"]
    if named is not None:
        args += ["-s", f"ASYNCIO_EVENT_LOOP={named}"]
    proc = run_crawl(*args)
    log = proc.stderr
    assert proc.returncode == 0, log[-3000:]
    expected = loop_name(load_object(named)) if named else default_loop()
    assert stats_value(log, "webspider/event_loop") == expected, log[-3000:]
    assert set(server.requested_pages()) >= {f"/p/{i}" for i in range(PAGES)}
    assert stats_count(log, "webspider/page_worker/parsed_count") > 0, log[-3000:]
    # the worker wrote the mirror
    mirrored = out / "mirror" / f"{server.name}_{server.port}" / "p"
    assert len(list(mirrored.iterdir())) == PAGES


def test_on_a_reactor_without_asyncio_the_crawl_says_the_worker_is_off(
    tmp_path, server, http_client
):
    """Twisted's own epoll reactor runs no asyncio loop: the crawl works, the
    page worker (its pipes are the loop's) does not start, and the log says
    so rather than the crawl running on one core without a word. With
    ``WEBSPIDER_HTTP_CLIENT=lean`` Scrapy's client downloads (the lean one
    runs on the asyncio loop)."""
    if sys.platform != "linux":
        pytest.skip("Twisted's epoll reactor is Linux's")
    links = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(PAGES))
    server.add("/", html(links))
    for i in range(PAGES):
        server.add(f"/p/{i}", html(f'<a href="/p/{(i + 1) % PAGES}">next</a>'))
    out = tmp_path / "out"
    proc = run_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-s", "TWISTED_REACTOR=twisted.internet.epollreactor.EPollReactor"),
    )
    log = proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert set(server.requested_pages()) >= {f"/p/{i}" for i in range(PAGES)}
    assert "Page worker off: the reactor (TWISTED_REACTOR) runs no asyncio" in log
    assert stats_value(log, "webspider/event_loop") is None
    assert stats_count(log, "webspider/page_worker/parsed_count") == 0
    assert stats_count(log, "webspider/pages/fetched_count") == PAGES + 1
