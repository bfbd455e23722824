"""Skip requests to addresses the crawl must not reach (reason ``address``).

A downloader middleware, so it sees every request before it goes out: start
URLs, links, redirect targets, sitemap URLs, link checks and your own. It
runs before robots.txt (so a refused host's robots.txt is never fetched):
a host written as an address, in any spelling browsers accept
(``2130706434``, ``0x7f000002``, ``127.1``, ``[::ffff:127.0.0.2]``), is judged
as that address; a name by what it resolves to, looked up once per host.

This is the early, well-reported check; the authority is the connection
itself (webspider.addresses.resolver), which judges each connection's own
resolution again, so a name whose answer changes after this check (DNS
rebinding) still cannot reach a refused address. A refusal there fails the
download with AddressRefused, which this middleware records as a skip too.

Settings: ``WEBSPIDER_ADDRESSES_ENABLED``, ``WEBSPIDER_ADDRESSES_ALLOW``.
Stats: ``webspider/skipped/url_count/address`` and the guard's
(webspider.addresses.guard).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from webspider import skips
from webspider.addresses.guard import UNKNOWN, AddressGuard, Refusal
from webspider.addresses.options import AddressOptions
from webspider.addresses.resolver import installed_resolver
from webspider.exceptions import AddressRefused
from webspider.keys import META_CHECK_ONLY, META_REDIRECTED_OUT, META_ROBOTSTXT
from webspider.utils.url import FETCHABLE_SCHEMES

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class AddressMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        if not AddressOptions.of(crawler.settings).enabled:
            logger.warning(
                "The address policy is OFF (WEBSPIDER_ADDRESSES_ENABLED=0): pages "
                "can lead the crawl to loopback, private and cloud metadata "
                "addresses"
            )
            raise NotConfigured
        self.guard = AddressGuard.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def refusal(self, request: Request) -> Refusal | None:
        """Why ``request`` must not go out, None when it may; override to
        decide otherwise (the connection still applies the policy)."""
        parts = urlparse_cached(request)
        host = parts.hostname
        if parts.scheme not in FETCHABLE_SCHEMES or not host:
            return None
        verdict = self.guard.known_verdict(host)
        if verdict is not UNKNOWN:  # the common case: a host already judged
            return verdict  # type: ignore[return-value]
        return await self.guard.check_host(host, installed_resolver().inner)

    async def process_request(self, request: Request) -> None:
        refusal = await self.refusal(request)
        if refusal is not None:
            # recorded as a skip by process_exception, with the connection's
            # own refusals
            raise AddressRefused(request.url, str(refusal))

    def process_exception(self, request: Request, exception: Exception) -> None:
        if not isinstance(exception, AddressRefused):
            return
        meta = request.meta
        if meta.get(META_ROBOTSTXT):
            return
        if meta.get(META_CHECK_ONLY) and not meta.get(META_REDIRECTED_OUT):
            # the check of a link the scope skipped (check_external): its
            # URL is counted as skipped already, for the scope (one reason a
            # URL); a redirect's check is the first word about its target
            return
        skips.skip_request(self.crawler, request, skips.ADDRESS)
