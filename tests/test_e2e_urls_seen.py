"""The summary's ``urls_seen`` (stats ``webspider/scheduler/url_count``): the
distinct URLs the crawl scheduled, each once, whatever way it was scheduled —
a link within the depth cap, a deferred link when its round starts, a
request retried — checked against the URLs the server answered."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html

if TYPE_CHECKING:
    from tests.support.crawl import CrawlResult
    from tests.support.server import SeenRequest, TestServer

pytestmark = pytest.mark.e2e

STAT = "webspider/scheduler/url_count"


def chain(server: TestServer, length: int) -> None:
    """/ → /1 → … → /<length>, and each page links back to /."""
    server.add("/", html('<a href="/1">1</a>'))
    for i in range(1, length + 1):
        nxt = f'<a href="/{i + 1}">next</a>' if i < length else ""
        server.add(f"/{i}", html(f'<a href="/">home</a>{nxt}', title=f"Page {i}"))


def urls_seen(result: CrawlResult) -> int:
    summary = json.loads((result.output / "summary.json").read_text())
    assert summary["urls_seen"] == result.stats[STAT]
    return int(summary["urls_seen"])


@deferred_f_from_coro_f
async def test_deferred_urls_are_counted_when_their_round_starts(tmp_path, server):
    chain(server, 6)
    result = await crawl(tmp_path, start_urls=server.url("/"), max_depth="1")
    pages = set(server.requested_pages())
    assert pages == {"/", *(f"/{i}" for i in range(1, 7))}
    assert result.stats["webspider/depth/round_completed_count"] >= 3  # deferred
    assert urls_seen(result) == len(pages)


@deferred_f_from_coro_f
async def test_deferred_urls_left_when_the_crawl_stops_are_not_counted(
    tmp_path, server
):
    chain(server, 6)
    result = await crawl(
        tmp_path, start_urls=server.url("/"), max_depth="1", max_rounds="2"
    )
    pages = set(server.requested_pages())
    assert "/6" not in pages
    assert result.stats["webspider/depth/deferred_left_count"] == 1
    assert urls_seen(result) == len(pages)


@deferred_f_from_coro_f
async def test_a_retried_url_is_counted_once(tmp_path, server):
    answers = iter([503, 503])

    def flaky(seen: SeenRequest) -> Page:
        status = next(answers, 200)
        return Page(html("flaky", title="Flaky"), status=status)

    server.add("/", html('<a href="/flaky">flaky</a><a href="/ok">ok</a>'))
    server.add("/flaky", flaky)
    server.add("/ok", html("ok", title="Ok"))
    result = await crawl(
        tmp_path, start_urls=server.url("/"), settings={"RETRY_TIMES": 2}
    )
    assert server.requested_pages().count("/flaky") == 3  # retried twice
    assert set(server.requested_pages()) == {"/", "/flaky", "/ok"}
    assert urls_seen(result) == 3
