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

The sitemaps read are kept in the crawl state as records (namespace
``politeness.sitemaps``: a sitemap's URL → ``1`` for a urlset whose URLs are
queued, or the list of the sitemaps an index names), written in the state's
transaction with the requests they brought: a resumed crawl does not read
them again (it follows a read index to the sitemaps it names, to request
those not read yet), and a sitemap requested but not read before a kill is
requested again. A new crawl on a state whose crawl finished (an update
crawl) reads them all again.

Settings: ``WEBSPIDER_ROBOTSTXT_SITEMAPS`` (off by default), ``ROBOTSTXT_OBEY``,
``DOWNLOAD_MAXSIZE`` (the most a ``.xml.gz`` is unpacked to).
Stats: ``webspider/sitemaps/fetched_count``, ``webspider/sitemaps/url_count``,
``webspider/sitemaps/warning_count`` (sitemaps with a warning),
``webspider/sitemaps/bad_url_count`` (``<loc>`` values left out),
``webspider/sitemaps/from_state_count`` (sitemaps a resumed crawl found read
already).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from scrapy import Request
from scrapy.exceptions import NotConfigured

from webspider import signals
from webspider.keys import META_SITEMAP, STATS_STATE_RESUMED
from webspider.politeness.options import PolitenessOptions
from webspider.politeness.robotstxt import origin_url
from webspider.politeness.sitemapxml import SITEMAPINDEX, read_sitemap, usable
from webspider.records import MemoryRecords
from webspider.requests import link_requests, page_spider

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure
    from typing_extensions import Self

    from webspider.politeness.robotsrules import RobotsRules
    from webspider.records import Records, RecordStore
    from webspider.utils.url import Origin

logger = logging.getLogger(__name__)

STATS_FETCHED = "webspider/sitemaps/fetched_count"
STATS_URLS = "webspider/sitemaps/url_count"
STATS_WARNINGS = "webspider/sitemaps/warning_count"
STATS_BAD_URLS = "webspider/sitemaps/bad_url_count"
STATS_FROM_STATE = "webspider/sitemaps/from_state_count"
NS_SITEMAPS = "politeness.sitemaps"
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
        #: sitemaps requested by this run (a few per site)
        self._requested: set[str] = set()
        #: sitemaps read (see the module docstring); in memory until the
        #: crawl state opens, and without one
        self.read: Records = MemoryRecords()
        crawler.signals.connect(self.robots_rules_found, signals.robots_rules_found)
        crawler.signals.connect(
            self.crawl_state_opened, signal=signals.crawl_state_opened
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def crawl_state_opened(self, records: RecordStore) -> None:
        self.read = records.records(NS_SITEMAPS)
        stats = self.crawler.stats
        if stats is None or not stats.get_value(STATS_STATE_RESUMED):
            self.read.clear()  # a new crawl reads them again

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
        if url in self._requested or level > MAX_LEVEL:
            return
        self._requested.add(url)
        read = self.read.get(url)
        if read is not None:  # by the earlier part of a resumed crawl
            self._inc(STATS_FROM_STATE)
            if isinstance(read, list):  # an index: the sitemaps it names
                for child in read:
                    self.request_sitemap(child, level + 1)
            return
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
        # the URL it was requested as (before any redirect)
        requested = (response.meta.get("redirect_urls") or [response.url])[0]
        if found.kind == SITEMAPINDEX:
            for loc in found.locs:
                self.request_sitemap(loc, level + 1)
            self.read.put(requested, list(found.locs))
            return
        # a sitemap's URLs are links on it (a sitemap request has depth 0)
        link_request = link_requests(
            page_spider(self.crawler), depth=1, referer=response.url
        )
        for loc in found.locs:
            self._inc(STATS_URLS)
            yield link_request(loc, "page")
        # once every URL is queued: in the same commit as they are
        self.read.put(requested, 1)

    def on_error(self, failure: Failure) -> None:
        logger.info("Sitemap not read: %s", failure.getErrorMessage())

    def _inc(self, key: str, count: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key, count)
