"""Scrapy's downloader middleware chain without an awaitable a plain call.

Scrapy 2.19's DownloaderMiddlewareManager awaits every middleware's
``process_request`` and ``process_response``, whatever it returned: a
plain method's ``None`` or response goes through ``ensure_awaitable``
(a coroutine made and run for the value) with the method's dotted name
worked out for a warning, and through ``_handle_mw_method`` (a dict of
keyword arguments). A crawl passes each request through ~12
``process_request`` and ~12 ``process_response`` (Scrapy's and
webspider's features), most of them plain: ~1 µs each for the wrapping.

``DownloaderMiddlewares`` calls each method as Scrapy does and awaits only
what it returned that is awaitable (a coroutine, a Deferred: through
``ensure_awaitable``, with Scrapy's warning for a Deferred); what it does
with the value, and the order, are Scrapy's. Awaiting a coroutine that
returns at once does not yield to the event loop, so nothing runs in a
different order. Exceptions go through Scrapy's ``_process_exception``
unchanged. webspider's Downloader (webspider.politeness.downloader) takes
it; bench/README.md, "The crawl process's per-page cost by feature".

Ground floor: imports Scrapy and webspider.internals only.
"""

from __future__ import annotations

from inspect import isawaitable
from typing import TYPE_CHECKING, Any

from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.exceptions import _InvalidOutput
from scrapy.http import Request, Response
from scrapy.utils.defer import ensure_awaitable
from scrapy.utils.python import global_object_name
from twisted.internet.defer import Deferred

from webspider.internals import manager_spider, methods_requiring_spider

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine


class DownloaderMiddlewares(DownloaderMiddlewareManager):
    """DownloaderMiddlewareManager awaiting only what is awaitable."""

    async def _process_request(
        self,
        request: Request,
        download_func: Callable[[Request], Coroutine[Any, Any, Response]],
    ) -> Response | Request:
        spider_methods = methods_requiring_spider(self)
        for method in self.methods["process_request"]:
            assert method is not None
            if method in spider_methods:
                response = method(request=request, spider=manager_spider(self))
            else:
                response = method(request=request)
            if isinstance(response, Deferred) or isawaitable(response):
                response = await ensure_awaitable(
                    response, _warn=global_object_name(method)
                )
            if response is not None and not isinstance(response, (Response, Request)):
                raise _InvalidOutput(
                    f"Middleware {method.__qualname__} must return None, Response or "
                    f"Request, got {response.__class__.__name__}"
                )
            if response:
                return response
        return await download_func(request)

    async def _process_response(
        self, response: Response | Request, request: Request
    ) -> Response | Request:
        if response is None:
            raise TypeError("Received None in process_response")
        if isinstance(response, Request):
            return response
        spider_methods = methods_requiring_spider(self)
        for method in self.methods["process_response"]:
            assert method is not None
            if method in spider_methods:
                result = method(
                    request=request, response=response, spider=manager_spider(self)
                )
            else:
                result = method(request=request, response=response)
            if isinstance(result, Deferred) or isawaitable(result):
                result = await ensure_awaitable(
                    result, _warn=global_object_name(method)
                )
            if not isinstance(result, (Response, Request)):
                raise _InvalidOutput(
                    f"Middleware {method.__qualname__} must return Response or "
                    f"Request, got {type(result)}"
                )
            if isinstance(result, Request):
                return result
            response = result
        return response
