"""Scrapy's HTTP/1.1 download handler, with the address policy on every
connection it makes.

Each download runs with a ``Ticket`` (webspider.addresses.resolver) naming
the crawl's guard and the host connected to, so the reactor's GuardResolver
judges that connection's resolution by this crawl's policy; when it refused
every address, the download fails with ``AddressRefused`` (an IgnoreRequest:
not retried, not a broken link; the address middleware records the skip).

Through a proxy, the connection goes to the proxy (which you chose: its
address is not judged) and the proxy resolves the target: so the target's
host is judged here before the request is sent, by what it resolves to
here. The proxy resolves it again, and webspider cannot see what it
connects to; restrict the proxy's own egress too.

Settings: ``WEBSPIDER_ADDRESSES_ENABLED`` (off: Scrapy's handler as it is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.url import add_http_if_no_scheme

from webspider.addresses.dns import name_key
from webspider.addresses.guard import AddressGuard
from webspider.addresses.options import AddressOptions
from webspider.addresses.resolver import TICKET, Ticket, installed_resolver
from webspider.exceptions import AddressRefused

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class AddressGuardHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        enabled = AddressOptions.of(crawler.settings).enabled
        self.guard = AddressGuard.of(crawler) if enabled else None

    async def download_request(self, request: Request) -> Response:
        guard = self.guard
        if guard is None:
            return await super().download_request(request)
        resolver = installed_resolver()
        host = urlparse_cached(request).hostname or ""
        proxy = request.meta.get("proxy")
        proxy_host = None
        if proxy:
            refusal = await guard.check_host(host, resolver.inner)
            if refusal is not None:
                raise AddressRefused(request.url, str(refusal))
            proxy_host = name_key(urlsplit(add_http_if_no_scheme(proxy)).hostname or "")
        ticket = Ticket(guard, name_key(host), proxy_host)
        return await self.with_ticket(ticket, request, super().download_request)

    @staticmethod
    async def with_ticket(
        ticket: Ticket,
        request: Request,
        download: Callable[[Request], Awaitable[Response]],
    ) -> Response:
        """Run ``download`` with ``ticket`` naming this connection's host, so
        the guard's resolver judges it; a host refused whole (every address)
        is an ``AddressRefused``."""
        token = TICKET.set(ticket)
        try:
            return await download(request)
        except Exception:
            if ticket.refusal is not None:
                raise AddressRefused(request.url, str(ticket.refusal)) from None
            raise
        finally:
            TICKET.reset(token)
