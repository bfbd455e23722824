"""Exclusion patterns (``-a exclude_re=REGEX``): matching URLs are never
requested — sort orders, session parameters, printer-friendly copies and
other parameterised URLs that fool de-duplication.

Python regex syntax, searched anywhere in the URL as requested. An invalid
pattern is a one-line error at start (webspider.config.get_exclude_patterns).

Settings: ``WEBSPIDER_EXCLUDE_RE`` (a regex, or a list of them).
Meta keys honoured: ``webspider_robotstxt``, ``webspider_sitemap`` (robots.txt
and sitemap files pass),
``webspider_referer``.
Stats: ``webspider/skipped/url_count/exclude_re``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured

from webspider import skips
from webspider.keys import META_ROBOTSTXT, META_SITEMAP
from webspider.scope.options import ScopeOptions, get_dropped_seeds

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class ExcludePatternMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.patterns = ScopeOptions.of(crawler.settings).patterns
        if not self.patterns:
            raise NotConfigured
        for url, reason in get_dropped_seeds(crawler.settings):
            if reason == skips.EXCLUDE_RE:
                logger.warning("Start URL %s is not fetched: matches exclude_re", url)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def is_excluded(self, request: Request) -> bool:
        url = request.url
        return any(pattern.search(url) for pattern in self.patterns)

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get(META_ROBOTSTXT) or meta.get(META_SITEMAP):
            return
        if self.is_excluded(request):
            skips.skip_request(self.crawler, request, skips.EXCLUDE_RE)
            raise IgnoreRequest(f"exclude_re: {request.url}")
