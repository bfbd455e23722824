"""Seed the crawl from the ``Sitemap:`` lines of robots.txt (``-a sitemaps=1``).

Listens to webspider.signals.robots_rules_found (sent by the robots.txt
middleware for every origin it reads the rules of), requests each sitemap
once, follows sitemap indexes (three levels at most) and turns every
``<loc>`` of a urlset into an ordinary page request: scope, include/exclude,
exclude_re and robots.txt still decide whether it goes out. Sitemap files
themselves are not pages: they pass the include/exclude lists (meta
``webspider_sitemap``) but not the scope, and are not exported.

A sitemap that cannot be read whole (a gzip bomb or damaged gzip, XML that
is not well-formed, ``<loc>`` values that are not http(s) URLs, a relative
``Sitemap:`` line that leads nowhere) is one warning line naming the file
and what was wrong; whatever could be read of it is still used
(webspider.politeness.sitemapxml).

Settings: ``WEBSPIDER_ROBOTSTXT_SITEMAPS`` (off by default), ``ROBOTSTXT_OBEY``,
``DOWNLOAD_MAXSIZE`` (the most a ``.xml.gz`` is unpacked to).
Stats: ``webspider/sitemaps/fetched_count``, ``webspider/sitemaps/url_count``,
``webspider/sitemaps/warning_count`` (sitemaps with a warning),
``webspider/sitemaps/bad_url_count`` (``<loc>`` values left out).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from scrapy import Request
from scrapy.exceptions import NotConfigured

from webspider import signals
from webspider.keys import META_SITEMAP
from webspider.politeness.options import PolitenessOptions
from webspider.politeness.robotstxt import origin_url
from webspider.politeness.sitemapxml import SITEMAPINDEX, read_sitemap, usable
from webspider.requests import link_requests, page_spider

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure
    from typing_extensions import Self

    from webspider.politeness.robotsrules import RobotsRules
    from webspider.utils.url import Origin

logger = logging.getLogger(__name__)

STATS_FETCHED = "webspider/sitemaps/fetched_count"
STATS_URLS = "webspider/sitemaps/url_count"
STATS_WARNINGS = "webspider/sitemaps/warning_count"
STATS_BAD_URLS = "webspider/sitemaps/bad_url_count"
#: sitemap index → sitemap → … nesting followed at most
MAX_LEVEL = 3


class SitemapSeeder:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = PolitenessOptions.of(settings)
        if not options.sitemaps:
            raise NotConfigured
        if not options.obey_robots:
            logger.warning("sitemaps=1 has no effect with robots.txt off (robots=0)")
            raise NotConfigured
        self.max_size = settings.getint("DOWNLOAD_MAXSIZE")
        self._seen: set[str] = set()
        crawler.signals.connect(self.robots_rules_found, signals.robots_rules_found)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def robots_rules_found(self, origin: Origin, parser: RobotsRules) -> None:
        robots = origin_url(origin) + "/robots.txt"
        for value in parser.sitemaps:
            # the protocol wants absolute URLs; a relative one is plain enough
            url = urljoin(robots, value)
            if usable(url):
                self.request_sitemap(url, level=1)
            else:
                self._inc(STATS_BAD_URLS)
                logger.warning(
                    "Sitemap line %r of %s is not an http(s) URL: ignored",
                    value[:200],
                    robots,
                )

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
        found = read_sitemap(response.body, self.max_size)
        if found.bad_locs:
            self._inc(STATS_BAD_URLS, found.bad_locs)
        if found.problems:
            self._inc(STATS_WARNINGS)
            logger.warning(
                "Sitemap %s: %s; %d URL(s) read from it",
                response.url,
                "; ".join(found.problems),
                len(found.locs),
            )
        level = int(response.meta.get(META_SITEMAP, 1))
        if found.kind == SITEMAPINDEX:
            for loc in found.locs:
                self.request_sitemap(loc, level + 1)
            return
        # a sitemap's URLs are links on it (a sitemap request has depth 0)
        link_request = link_requests(
            page_spider(self.crawler), depth=1, referer=response.url
        )
        for loc in found.locs:
            self._inc(STATS_URLS)
            yield link_request(loc, "page")

    def on_error(self, failure: Failure) -> None:
        logger.info("Sitemap not read: %s", failure.getErrorMessage())

    def _inc(self, key: str, count: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key, count)
