"""Skip overlong URLs and crawler traps, each with its own reason.

A downloader middleware (after scope, the lists and robots.txt, so a URL
skipped for those is not counted here), so it applies to every request that
would go out: followed links, redirect targets, link checks, your own.

- ``url_length``: longer than ``URLLENGTH_LIMIT`` (Scrapy's own spider
  middleware, which drops such links with no record, is switched off).
- ``repeated_path``: a path segment or run of segments repeated more than
  ``WEBSPIDER_TRAPS_MAX_REPEATS`` times in a row (webspider.bounds.traps).
- ``query_variants``: a path already requested with
  ``WEBSPIDER_TRAPS_MAX_QUERIES`` distinct query strings (canonical:
  argument order and session parameters do not make a new one).
- ``host_budget``: a host already sent ``WEBSPIDER_TRAPS_MAX_HOST_REQUESTS``
  requests (off by default).

A retry of a request let through is let through again, and not counted
twice. The query and host counts are records in the crawl state
(``bounds.queries``, ``bounds.hosts``): a resumed crawl goes on counting
(a request in flight at a kill is counted again when it is sent again), a
new crawl on a state whose crawl finished starts from zero.

Settings: ``URLLENGTH_LIMIT``, ``WEBSPIDER_TRAPS_ENABLED``,
``WEBSPIDER_TRAPS_MAX_REPEATS``, ``WEBSPIDER_TRAPS_MAX_QUERIES``,
``WEBSPIDER_TRAPS_MAX_HOST_REQUESTS``.
Meta keys honoured: ``webspider_robotstxt``, ``webspider_sitemap`` (robots.txt
and sitemap files pass), Scrapy's ``retry_times`` and
``webspider_retry_after_times`` (retries), ``webspider_referer``.
Stats: ``webspider/skipped/url_count/<reason>`` for the four reasons.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from webspider import signals, skips
from webspider.bounds.options import BoundsOptions
from webspider.bounds.traps import Counter, repeated_segments
from webspider.keys import (
    META_RETRY_AFTER_TIMES,
    META_ROBOTSTXT,
    META_SITEMAP,
    STATS_STATE_RESUMED,
)
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from webspider.records import RecordStore

logger = logging.getLogger(__name__)

NS_QUERIES = "bounds.queries"
NS_HOSTS = "bounds.hosts"


class TrapMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        options = BoundsOptions.of(crawler.settings)
        self.url_length = options.url_length
        self.max_repeats = options.max_repeats
        self.queries = Counter(options.max_queries) if options.max_queries else None
        self.hosts = (
            Counter(options.max_host_requests) if options.max_host_requests else None
        )
        if not (self.url_length or self.max_repeats or self.queries or self.hosts):
            raise NotConfigured
        #: hosts whose budget was spent (warned about once)
        self._spent: set[str] = set()
        if self.queries or self.hosts:
            crawler.signals.connect(
                self.crawl_state_opened, signal=signals.crawl_state_opened
            )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def crawl_state_opened(self, records: RecordStore) -> None:
        stats = self.crawler.stats
        resumed = stats is not None and stats.get_value(STATS_STATE_RESUMED)
        for counter, name in ((self.queries, NS_QUERIES), (self.hosts, NS_HOSTS)):
            if counter is not None:
                counter.records = records.records(name)
                if not resumed:
                    counter.records.clear()

    def trap_reason(self, request: Request) -> str | None:
        """Why ``request`` is not to be sent (a skip reason), or None, when
        it is counted against the query and host bounds. Override to exempt
        URLs of your choosing."""
        if self.url_length and len(request.url) > self.url_length:
            return skips.URL_LENGTH
        parts = urlparse_cached(request)
        if self.max_repeats and repeated_segments(parts.path, self.max_repeats):
            return skips.REPEATED_PATH
        meta = request.meta
        if meta.get("retry_times") or meta.get(META_RETRY_AFTER_TIMES):
            return None  # let through (and counted) the first time
        queries, hosts = self.queries, self.hosts
        path = None
        if queries is not None and parts.query:
            path = canonical_url(request.url).partition("?")[0]
            if queries.full(path):
                return skips.QUERY_VARIANTS
        host = parts.hostname or ""
        if hosts is not None:
            if hosts.full(host):
                self._budget_spent(host)
                return skips.HOST_BUDGET
            hosts.add(host)
        if path is not None:
            assert queries is not None
            queries.add(path)
        return None

    def _budget_spent(self, host: str) -> None:
        if host in self._spent:
            return
        self._spent.add(host)
        logger.warning(
            "Host %s had its %d requests (WEBSPIDER_TRAPS_MAX_HOST_REQUESTS): "
            "its other URLs are skipped (reason %s)",
            host,
            self.hosts.limit if self.hosts is not None else 0,
            skips.HOST_BUDGET,
        )

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get(META_ROBOTSTXT) or meta.get(META_SITEMAP):
            return
        reason = self.trap_reason(request)
        if reason is not None:
            skips.skip_request(self.crawler, request, reason)
            raise IgnoreRequest(f"{reason}: {request.url}")
