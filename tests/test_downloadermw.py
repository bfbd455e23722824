"""webspider.downloadermw: Scrapy's downloader middleware chain, awaiting
only what is awaitable — the same calls, order and outcomes as Scrapy's."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.exceptions import ScrapyDeprecationWarning, _InvalidOutput
from scrapy.http import Response
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler
from twisted.internet.defer import succeed

from webspider.downloadermw import DownloaderMiddlewares


class Plain:
    def __init__(self, name: str, calls: list[str], answer: Any = None) -> None:
        self.name, self.calls, self.answer = name, calls, answer

    def process_request(self, request: Request) -> Any:
        self.calls.append(f"{self.name} request")
        return self.answer(request) if callable(self.answer) else self.answer

    def process_response(self, request: Request, response: Response) -> Any:
        self.calls.append(f"{self.name} response {response.status}")
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self.calls.append(f"{self.name} exception {type(exception).__name__}")


class Async(Plain):
    async def process_request(self, request: Request) -> Any:
        return super().process_request(request)

    async def process_response(self, request: Request, response: Response) -> Any:
        return super().process_response(request, response)


class Swaps(Plain):
    def process_response(self, request: Request, response: Response) -> Any:
        self.calls.append(f"{self.name} response {response.status}")
        return response.replace(status=203)


async def run(cls: type, middlewares: list[Any], calls: list[str]) -> Any:
    manager = cls(*middlewares, crawler=get_crawler(Spider))

    async def download(request: Request) -> Response:
        calls.append("download")
        return Response(request.url, status=200)

    try:
        result = await manager.download_async(download, Request("http://a.test/"))
    except Exception as exc:  # compared between the two chains
        return f"raised {type(exc).__name__}: {exc}"
    return (type(result).__name__, getattr(result, "status", None))


CHAINS = {
    "plain and async": lambda c: [
        Plain("a", c),
        Async("b", c),
        Swaps("c", c),
        Plain("d", c),
    ],
    "a response ends the requests": lambda c: [
        Plain("a", c),
        Plain("b", c, lambda r: Response(r.url, status=304)),
        Plain("c", c),
    ],
    "an async response ends them too": lambda c: [
        Async("a", c, lambda r: Response(r.url, status=304)),
        Plain("b", c),
    ],
    "a request ends them": lambda c: [
        Plain("a", c, lambda r: Request("http://b.test/")),
        Plain("b", c),
    ],
    "bad output": lambda c: [Plain("a", c, "not a response")],
    "an exception": lambda c: [Plain("a", c, lambda r: 1 / 0), Plain("b", c)],
}


@pytest.mark.parametrize("chain", list(CHAINS))
@deferred_f_from_coro_f
async def test_it_calls_and_answers_as_scrapys_chain_does(chain):
    theirs: list[str] = []
    ours: list[str] = []
    expected = await run(DownloaderMiddlewareManager, CHAINS[chain](theirs), theirs)
    got = await run(DownloaderMiddlewares, CHAINS[chain](ours), ours)
    assert got == expected
    assert ours == theirs
    assert theirs  # the chain ran


@deferred_f_from_coro_f
async def test_a_deferred_is_awaited_with_scrapys_warning():
    calls: list[str] = []
    answer = Plain("a", calls, lambda r: succeed(Response(r.url, status=304)))
    with pytest.warns(ScrapyDeprecationWarning, match="returned a Deferred"):
        result = await run(DownloaderMiddlewares, [answer], calls)
    assert result == ("Response", 304)


@deferred_f_from_coro_f
async def test_bad_output_is_scrapys_error():
    calls: list[str] = []
    result = await run(DownloaderMiddlewares, [Plain("a", calls, 5)], calls)
    assert result.startswith(f"raised {_InvalidOutput.__name__}: Middleware")
