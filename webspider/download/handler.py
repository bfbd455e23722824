"""The http and https download handler: each request to the client chosen.

``WEBSPIDER_HTTP_CLIENT`` = ``twisted`` (Scrapy's HTTP/1.1 handler, as it
is) or ``lean`` (webspider.download.lean, on the asyncio loop). Even with
``lean``, Scrapy's handler downloads https, requests through a proxy
(``proxy`` in meta), and everything when the reactor is not Twisted's
asyncio reactor (``TWISTED_REACTOR``).

Both run under the address policy (a subclass of AddressGuardHandler): the
lean download with the same ``Ticket`` around it, so that the guard's
resolver, which the lean client asks as Twisted's endpoints do, hands over
only the addresses the policy allows, and a host refused whole is an
``AddressRefused``.

Settings: ``WEBSPIDER_HTTP_CLIENT``; Scrapy's ``DOWNLOAD_TIMEOUT``,
``DOWNLOAD_MAXSIZE``, ``DOWNLOAD_WARNSIZE``, ``DOWNLOAD_FAIL_ON_DATALOSS``,
``DOWNLOAD_BIND_ADDRESS``, ``CONCURRENT_REQUESTS_PER_DOMAIN`` (idle
connections kept a host). Meta: ``download_timeout``, ``download_maxsize``,
``download_warnsize``, ``download_fail_on_dataloss``, ``bindaddress``,
``proxy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.reactor import is_asyncio_reactor_installed

from webspider.addresses.dns import name_key
from webspider.addresses.handler import AddressGuardHandler
from webspider.addresses.resolver import Ticket
from webspider.download.lean import LeanClient
from webspider.download.options import DownloadOptions

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class HTTPClientHandler(AddressGuardHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        lean = DownloadOptions.of(crawler.settings).client == "lean"
        self.lean = (
            LeanClient(crawler) if lean and is_asyncio_reactor_installed() else None
        )

    async def download_request(self, request: Request) -> Response:
        lean = self.lean
        if (
            lean is None
            or urlparse_cached(request).scheme != "http"
            or request.meta.get("proxy")
        ):
            return await super().download_request(request)
        guard = self.guard
        if guard is None:
            return await lean.download(request)
        ticket = Ticket(guard, name_key(urlparse_cached(request).hostname or ""))
        return await self.with_ticket(ticket, request, lean.download)

    async def close(self) -> None:
        if self.lean is not None:
            await self.lean.close()
        await super().close()
