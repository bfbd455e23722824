"""webspider.spidermw: the page's output filters without Scrapy's per-item wrapper."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.spidermiddlewares.start import StartSpiderMiddleware
from scrapy.utils.conf import build_component_list
from scrapy.utils.defer import deferred_f_from_coro_f, ensure_awaitable
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from webspider.credentials.referer import RefererMiddleware
from webspider.directives.middleware import PageDirectivesMiddleware
from webspider.frontier.depth import DepthMiddleware
from webspider.spidermw import OutputFilter, StartRequestsMiddleware


class DropOdd(OutputFilter, BaseSpiderMiddleware):
    """Drops the requests of odd pages and items that are None-like."""

    def get_processed_request(self, request: Request, response: Any) -> Request | None:
        return None if request.url.endswith(("1", "3")) else request

    def get_processed_item(self, item: Any, response: Any) -> Any:
        return None if item == "drop" else f"seen {item}"


async def _output() -> Any:
    for i in range(4):
        yield Request(f"https://example.org/{i}")
        yield "drop" if i == 2 else i


@pytest.mark.parametrize(
    "cls", [RefererMiddleware, PageDirectivesMiddleware, DepthMiddleware]
)
def test_every_page_output_filter_is_unwrapped(cls):
    # Scrapy's method is wrapped (functools.wraps sets __wrapped__) in a
    # second async generator an item; the filters on every page's output
    # take the plain one
    assert hasattr(BaseSpiderMiddleware.process_spider_output_async, "__wrapped__")
    method = cls.process_spider_output_async
    assert method is OutputFilter.process_spider_output_async
    assert not hasattr(method, "__wrapped__")


@deferred_f_from_coro_f
async def test_scrapy_takes_it_and_it_filters_as_scrapys_does():
    crawler = get_crawler(Spider)
    ours = DropOdd(crawler)
    # Scrapy's chain picks the async method and passes no spider to it
    picked = SpiderMiddlewareManager._get_process_spider_output(ours)
    assert picked == ours.process_spider_output_async
    response = HtmlResponse("https://example.org/", body=b"")

    class Theirs(BaseSpiderMiddleware):
        get_processed_request = DropOdd.get_processed_request
        get_processed_item = DropOdd.get_processed_item

    async def collect(mw: Any) -> list[Any]:
        out = mw.process_spider_output_async(response=response, result=_output())
        return [o.url if isinstance(o, Request) else o async for o in out]

    got = await collect(ours)
    assert got == await collect(Theirs(crawler))
    assert got == [
        "https://example.org/0",
        "seen 0",
        "seen 1",
        "https://example.org/2",
        "seen 3",
    ]


def test_the_crawl_settings_name_them():
    settings = Settings()
    settings.setmodule("webspider.settings")
    enabled = settings.getdict("SPIDER_MIDDLEWARES")
    for cls in (RefererMiddleware, PageDirectivesMiddleware, DepthMiddleware):
        assert enabled[f"{cls.__module__}.{cls.__qualname__}"] is not None


def test_no_output_filter_of_the_crawl_is_wrapped():
    # every page's output crosses each of these: none of them adds Scrapy's
    # wrapper generator (StartSpiderMiddleware did, for nothing)
    settings = Settings()
    settings.setmodule("webspider.settings")
    paths = build_component_list(settings.getwithbase("SPIDER_MIDDLEWARES"))
    assert "webspider.spidermw.StartRequestsMiddleware" in paths
    assert "scrapy.spidermiddlewares.start.StartSpiderMiddleware" not in paths
    for path in paths:
        cls = load_object(path)
        for name in ("process_spider_output_async", "process_spider_output"):
            method = getattr(cls, name, None)
            if method is not None and name.endswith("_async"):
                assert not hasattr(method, "__wrapped__"), path
    assert not hasattr(StartRequestsMiddleware, "process_spider_output")
    assert not hasattr(StartRequestsMiddleware, "process_spider_output_async")


@deferred_f_from_coro_f
async def test_the_start_requests_are_marked_as_scrapys_middleware_marks_them():
    crawler = get_crawler(Spider)

    async def start() -> Any:
        yield Request("https://example.org/a")
        yield {"an": "item"}
        yield Request("https://example.org/b", meta={"is_start_request": False})

    async def run(mw: Any) -> list[Any]:
        got = await ensure_awaitable(mw.process_start(start()))
        return [
            o.meta.get("is_start_request") if isinstance(o, Request) else o
            async for o in got
        ]

    ours = await run(StartRequestsMiddleware.from_crawler(crawler))
    assert ours == await run(StartSpiderMiddleware(crawler))
    assert ours == [True, {"an": "item"}, False]
