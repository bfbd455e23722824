"""Keep the crawl within its scope: the start URLs' hosts, domains, or all.

A downloader middleware (like Scrapy's OffsiteMiddleware since 2.11.2), so it
applies to every request that would go out: start URLs, followed links,
redirect targets and requests a user's own code yields.

Settings: ``WEBSPIDER_SCOPE`` (host, domain, all), ``WEBSPIDER_START_URLS``.
Meta keys honoured: ``allow_offsite`` (as Scrapy's), ``webspider_referer``.
Stats: ``webspider/skipped/url_count/scope``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured

from webspider import skips
from webspider.config import get_start_urls
from webspider.scope.hosts import HostScope
from webspider.scope.options import ScopeOptions
from webspider.utils.url import host_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self


class ScopeMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        scope = ScopeOptions.of(settings).scope
        if scope == "all":
            raise NotConfigured
        self.scope = HostScope(scope, {host_of(u) for u in get_start_urls(settings)})

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def should_follow(self, request: Request) -> bool:
        """Whether ``request`` is in scope; override to widen or narrow it."""
        if request.meta.get("allow_offsite"):
            return True
        return self.scope.allows(host_of(request.url))

    def process_request(self, request: Request) -> None:
        if not self.should_follow(request):
            skips.skip_request(self.crawler, request, skips.SCOPE)
            raise IgnoreRequest(f"out of scope: {request.url}")
