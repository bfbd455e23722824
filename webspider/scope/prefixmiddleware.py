"""Include and exclude URL prefix lists (``-a include=…``, ``-a exclude=…``).

With a non-empty include list, only URLs that start with one of its prefixes
are requested; a URL that starts with an exclude prefix never is (exclude
wins). Prefix semantics and normalisation: webspider.scope.prefixes. A
downloader middleware, so it applies to every request: start URLs, followed
links, redirect targets and requests a user's own code yields.

Settings: ``WEBSPIDER_INCLUDE``, ``WEBSPIDER_EXCLUDE`` (lists, or
``a,b``/``@file`` strings), ``WEBSPIDER_PREFIXES_CASE_SENSITIVE``,
``WEBSPIDER_PREFIXES_ENABLED``.
Meta keys honoured: ``webspider_robotstxt``, ``webspider_sitemap`` (robots.txt
and sitemap files pass),
``webspider_referer``.
Stats: ``webspider/skipped/url_count/include``, ``…/exclude``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured

from webspider import skips
from webspider.keys import META_ROBOTSTXT, META_SITEMAP
from webspider.scope.options import ScopeOptions, get_dropped_seeds
from webspider.scope.prefixes import prefix_reason

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class PrefixMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = ScopeOptions.of(settings)
        if not options.prefixes_enabled:
            raise NotConfigured
        self.include = options.include
        self.exclude = options.exclude
        if not self.include and not self.exclude:
            raise NotConfigured
        for url, reason in get_dropped_seeds(settings):
            if reason in (skips.INCLUDE, skips.EXCLUDE):
                logger.warning(
                    "Start URL %s is not fetched: %s",
                    url,
                    "outside the include list"
                    if reason == skips.INCLUDE
                    else "inside the exclude list",
                )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def skip_reason(self, request: Request) -> str | None:
        """``exclude``, ``include`` or None (requested); override to refine."""
        return prefix_reason(request.url, self.include, self.exclude)

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get(META_ROBOTSTXT) or meta.get(META_SITEMAP):
            return
        reason = self.skip_reason(request)
        if reason is not None:
            skips.skip_request(self.crawler, request, reason)
            raise IgnoreRequest(f"{reason}: {request.url}")
