"""Seed the crawl from the ``Sitemap:`` lines of robots.txt (``-a sitemaps=1``).

Listens to webspider.signals.robots_rules_found (sent by the robots.txt
middleware for every origin it reads the rules of), requests each sitemap
once, follows sitemap indexes (three levels at most) and turns every
``<loc>`` of a urlset into an ordinary page request: scope, include/exclude,
exclude_re and robots.txt still decide whether it goes out. Sitemap files
themselves are not pages: they pass the include/exclude lists (meta
``webspider_sitemap``) but not the scope, and are not exported.

Settings: ``WEBSPIDER_ROBOTSTXT_SITEMAPS`` (off by default), ``ROBOTSTXT_OBEY``.
Stats: ``webspider/sitemaps/fetched_count``, ``webspider/sitemaps/url_count``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap

from webspider import signals
from webspider.config import get_bool
from webspider.keys import META_SITEMAP
from webspider.requests import link_requests, page_spider

if TYPE_CHECKING:
    from collections.abc import Iterator

    from protego import Protego
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure
    from typing_extensions import Self

    from webspider.utils.url import Origin

logger = logging.getLogger(__name__)

STATS_FETCHED = "webspider/sitemaps/fetched_count"
STATS_URLS = "webspider/sitemaps/url_count"
#: sitemap index → sitemap → … nesting followed at most
MAX_LEVEL = 3


class SitemapSeeder:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        if not get_bool(settings, "WEBSPIDER_ROBOTSTXT_SITEMAPS", False):
            raise NotConfigured
        if not get_bool(settings, "ROBOTSTXT_OBEY", True):
            logger.warning("sitemaps=1 has no effect with robots.txt off (robots=0)")
            raise NotConfigured
        self.max_size = settings.getint("DOWNLOAD_MAXSIZE")
        self._seen: set[str] = set()
        crawler.signals.connect(self.robots_rules_found, signals.robots_rules_found)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def robots_rules_found(self, origin: Origin, parser: Protego) -> None:
        for url in parser.sitemaps:
            self.request_sitemap(url, level=1)

    def request_sitemap(self, url: str, level: int) -> None:
        if url in self._seen or level > MAX_LEVEL:
            return
        self._seen.add(url)
        assert self.crawler.engine is not None
        self.crawler.engine.crawl(
            Request(
                url,
                callback=self.parse_sitemap,
                errback=self.on_error,
                meta={META_SITEMAP: level, "depth": 0},
            )
        )

    def parse_sitemap(self, response: Response) -> Iterator[Request]:
        self._inc(STATS_FETCHED)
        body = response.body
        if gzip_magic_number(response):
            body = gunzip(body, max_size=self.max_size)
        try:
            sitemap = Sitemap(body)
        except Exception:  # lxml gives up on empty or non-XML bodies
            logger.warning("Not a sitemap: %s", response.url)
            return
        level = int(response.meta.get(META_SITEMAP, 1))
        # a sitemap's URLs are links on it (a sitemap request has depth 0)
        link_request = link_requests(
            page_spider(self.crawler), depth=1, referer=response.url
        )
        for entry in sitemap:
            loc = entry.get("loc")
            if not isinstance(loc, str):
                continue
            if sitemap.type == "sitemapindex":
                self.request_sitemap(loc, level + 1)
                continue
            self._inc(STATS_URLS)
            yield link_request(loc, "page")

    def on_error(self, failure: Failure) -> None:
        logger.info("Sitemap not read: %s", failure.getErrorMessage())

    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)
