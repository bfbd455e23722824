"""Credentials go only to the origins they belong to.

``Authorization``, ``Proxy-Authorization`` and ``Cookie`` headers, whoever
set them (``DEFAULT_REQUEST_HEADERS``, Scrapy's HttpAuthMiddleware with
``HTTPAUTH_*`` or ``http_user``, a request's own headers), are removed from
every request to an origin (scheme, host, port) other than the start URLs'
(and ``WEBSPIDER_CREDENTIALS_ORIGINS``): a link or a redirect to another
host, port or scheme gets none. Scrapy's RedirectMiddleware drops them on a
redirect, but the redirected request passes DefaultHeadersMiddleware and
HttpAuthMiddleware again, which put them back; this middleware runs after
those (and after the cookie jar and the proxy middleware), just before the
download.

Two headers belong elsewhere: ``Proxy-Authorization`` on a request through
a proxy is the proxy's (Scrapy's HttpProxyMiddleware keeps it to its
proxy); with ``COOKIES_ENABLED`` the cookie jar writes ``Cookie`` by the
site's own cookie rules (RFC 6265: a site's cookies to that site), and it
is left alone.

A start URL given as ``http://user:password@host/`` crawls that origin with
those credentials (HTTP Basic, sent with every request to it that has no
``Authorization`` yet); the password is in no output or log line (reports
show ``user:***@``).

Settings: ``WEBSPIDER_CREDENTIALS_ENABLED``, ``WEBSPIDER_CREDENTIALS_ORIGINS``,
``COOKIES_ENABLED``. Stats: ``webspider/credentials/removed_count/<header>``
(``authorization``, ``proxy-authorization``, ``cookie``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.httpobj import urlparse_cached
from w3lib.http import basic_auth_header

from webspider.config import get_start_credentials
from webspider.credentials.options import CredentialsOptions
from webspider.utils.url import Origin, origin_of_parts

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)

STATS_REMOVED = "webspider/credentials/removed_count/{}"

AUTHORIZATION = b"Authorization"
PROXY_AUTHORIZATION = b"Proxy-Authorization"
COOKIE = b"Cookie"


class CredentialsMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = CredentialsOptions.of(settings)
        if not options.enabled:
            if get_start_credentials(settings):
                logger.warning(
                    "WEBSPIDER_CREDENTIALS_ENABLED=0: the user:password of start "
                    "URLs is not sent"
                )
            raise NotConfigured
        self.origins = options.origins
        self.basic_auth: dict[Origin, bytes] = {
            origin: basic_auth_header(user, password)
            for origin, (user, password) in options.basic_auth
        }
        #: the cookie jar owns the Cookie header
        self.cookie_jar = settings.getbool("COOKIES_ENABLED")
        self._told = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def belongs(self, request: Request, origin: Origin) -> bool:
        """Whether the crawl's credentials may go with ``request`` (to
        ``origin``); override to widen or narrow."""
        return origin in self.origins

    def process_request(self, request: Request) -> None:
        origin = origin_of_parts(urlparse_cached(request))
        headers = request.headers
        if self.belongs(request, origin):
            basic = self.basic_auth.get(origin)
            if basic is not None and AUTHORIZATION not in headers:
                headers[AUTHORIZATION] = basic
            return
        removed = [AUTHORIZATION] if AUTHORIZATION in headers else []
        if COOKIE in headers and not self.cookie_jar:
            removed.append(COOKIE)
        if PROXY_AUTHORIZATION in headers and not request.meta.get("proxy"):
            removed.append(PROXY_AUTHORIZATION)
        if removed:
            self.remove(request, removed)

    def remove(self, request: Request, names: list[bytes]) -> None:
        for name in names:
            del request.headers[name]
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value(
                    STATS_REMOVED.format(name.decode().lower())
                )
        if not self._told:
            self._told = True
            logger.info(
                "Not sending %s to %s: credentials go only to the start URLs' "
                "origins (and WEBSPIDER_CREDENTIALS_ORIGINS); further removals "
                "are only counted (stats webspider/credentials/removed_count/…)",
                ", ".join(name.decode() for name in names),
                request.url,
            )
