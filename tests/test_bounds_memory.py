"""The memory bound's accounting (webspider.bounds.memory) in isolation: an
engine whose requests in progress the test decides."""

from __future__ import annotations

import asyncio
import gzip
from types import SimpleNamespace

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from webspider.bounds.memory import BodyMemoryMiddleware


def middleware(budget: int) -> tuple[BodyMemoryMiddleware, set[Request]]:
    crawler = get_crawler(Spider, {"WEBSPIDER_BODY_MEMORY_MAX": budget})
    crawler.spider = Spider("test")
    crawler.stats.open_spider()
    in_progress: set[Request] = set()
    # what webspider.internals.requests_in_progress reads
    crawler.engine = SimpleNamespace(_slot=SimpleNamespace(inprogress=in_progress))  # type: ignore[assignment]
    return build_from_crawler(BodyMemoryMiddleware, crawler), in_progress


def response(request: Request, body: bytes, **headers: str) -> HtmlResponse:
    return HtmlResponse(request.url, body=body, headers=headers, request=request)


def test_bodies_count_from_their_first_byte_until_their_request_leaves():
    mw, in_progress = middleware(1000)
    request = Request("http://x.test/a")
    in_progress.add(request)
    assert mw.room_for_download()
    mw.bytes_received(b"x" * 600, request)
    mw.bytes_received(b"x" * 600, request)
    assert mw.held() == (0, 1200)
    assert not mw.room_for_download()
    in_progress.discard(request)  # its page is done
    assert mw.held() == (0, 0)
    assert mw.room_for_download()


@deferred_f_from_coro_f
async def test_a_response_is_decompressed_only_when_room_is_left():
    mw, in_progress = middleware(1000)
    first, second = Request("http://x.test/1"), Request("http://x.test/2")
    in_progress.update((first, second))
    bomb = gzip.compress(b"\0" * 5000)
    # with nothing held, anything goes through (one body over the bound)
    got = await mw.process_response(
        first, response(first, bomb, **{"Content-Encoding": "gzip"})
    )
    assert len(got.body) == 5000
    assert mw.held() == (5000, 5000)
    # the next one waits, holding only the bytes it came with
    waiting = asyncio.ensure_future(
        mw.process_response(
            second, response(second, bomb, **{"Content-Encoding": "gzip"})
        )
    )
    await asyncio.sleep(0.2)
    assert not waiting.done()
    assert mw.held() == (5000, 5000 + len(bomb))
    in_progress.discard(first)  # the first page is done
    got = await asyncio.wait_for(waiting, 2)
    assert len(got.body) == 5000
    assert (
        mw.crawler.stats.get_value("webspider/body_memory/waited_count/response") == 1
    )
    assert mw.crawler.stats.get_value("webspider/body_memory/max_bytes") >= 5000


def test_no_bound_and_no_decompression_is_not_configured():
    crawler = get_crawler(
        Spider, {"WEBSPIDER_BODY_MEMORY_MAX": 0, "COMPRESSION_ENABLED": False}
    )
    with pytest.raises(NotConfigured):
        build_from_crawler(BodyMemoryMiddleware, crawler)
