"""Check links that leave the scope, once each, without following them.

With WEBSPIDER_CHECK_EXTERNAL (``-a check_external=1``), every URL that
ScopeMiddleware skips for being out of scope is checked with one HEAD
request — falling back to GET when the server refuses HEAD (405, 501) — so a
site owner learns about dead outbound links, as with ``wget --spider`` or
LinkChecker. The answer is never parsed, followed, exported or mirrored: the
spider's callback returns nothing for ``webspider_check_only`` responses, and
a check's GET stops reading as soon as the headers arrived.

An internal URL that redirects out of the scope is checked the same way (its
redirect becomes a check instead of being skipped), so a link to ``/go`` that
ends on a dead external page is reported as broken, with ``/go``'s referrers.

The check requests carry ``allow_offsite`` (which ScopeMiddleware, like
Scrapy's OffsiteMiddleware, lets through, redirects included) and
``webspider_check_only``. robots.txt and politeness apply to them as to any
request: the robots.txt middleware's own requests carry ``allow_offsite``,
so the scope lets a checked host's robots.txt through. The seen-set
keys HEAD apart from GET, so each URL is checked once.

Settings: WEBSPIDER_CHECK_EXTERNAL. Meta keys set: ``webspider_check_only``,
``allow_offsite``, ``webspider_referer``, ``webspider_redirected_out``. Stats:
``webspider/linkcheck/request_count``, ``webspider/linkcheck/get_fallback_count``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request
from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured, StopDownload

from webspider import signals, skips
from webspider.keys import META_CHECK_ONLY, META_REDIRECTED_OUT
from webspider.reports.options import ReportOptions
from webspider.requests import page_request, page_spider
from webspider.scope.middleware import ScopeMiddleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

#: set on the check of an internal URL's redirect out of the scope

STATS_CHECKS = "webspider/linkcheck/request_count"
STATS_GET_FALLBACK = "webspider/linkcheck/get_fallback_count"


class LinkCheckMiddleware:
    #: statuses meaning "HEAD is not allowed here", answered by retrying with GET
    head_refused_statuses = frozenset({405, 501})

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        if not ReportOptions.of(crawler.settings).check_external:
            raise NotConfigured
        crawler.signals.connect(self.url_skipped, signal=signals.url_skipped)
        crawler.signals.connect(
            self.headers_received, signal=scrapy_signals.headers_received
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def should_check(self, url: str, reason: str, referer: str | None) -> bool:
        """Whether a skipped URL gets a check; override to check more or less.

        Only links (found on a page, so with a referer) are checked: the
        robots.txt request of an out-of-scope host is skipped too, and it is
        no link."""
        return reason == skips.SCOPE and referer is not None

    def check_request(self, url: str, referer: str | None) -> Request:
        return page_request(
            page_spider(self.crawler),
            url,
            method="HEAD",
            referer=referer,
            check_only=True,
        )

    def url_skipped(self, url: str, reason: str, referer: str | None = None) -> None:
        if not self.should_check(url, reason, referer):
            return
        engine = self.crawler.engine
        if engine is None or self.crawler.spider is None:
            return
        engine.crawl(self.check_request(url, referer))
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_CHECKS)

    def process_request(self, request: Request) -> Request | None:
        meta = request.meta
        if (
            meta.get("redirect_urls")
            and not meta.get(META_CHECK_ONLY)
            and self.redirect_leaves_scope(request)
        ):
            return self.redirect_check(request)
        return None

    def redirect_leaves_scope(self, request: Request) -> bool:
        """A page's redirect that the scope middleware would not let out."""
        scope = self.crawler.get_downloader_middleware(ScopeMiddleware)
        return scope is not None and not scope.should_follow(request)

    def redirect_check(self, request: Request) -> Request:
        """Check, instead of fetching, where an internal URL redirects out of
        the scope: the link to the internal URL is broken when that is."""
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_CHECKS)
        meta = {
            **request.meta,
            META_CHECK_ONLY: True,
            "allow_offsite": True,
            META_REDIRECTED_OUT: True,
        }
        return request.replace(method="HEAD", meta=meta)

    def process_response(
        self, request: Request, response: Response
    ) -> Request | Response:
        if (
            request.meta.get(META_CHECK_ONLY)
            and request.method == "HEAD"
            and response.status in self.head_refused_statuses
        ):
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value(STATS_GET_FALLBACK)
            # dont_filter: the crawl's seen-set already has this URL's GET
            # (it is what the scope middleware skipped).
            return request.replace(method="GET", dont_filter=True)
        return response

    def headers_received(self, request: Request) -> None:
        if request.meta.get(META_CHECK_ONLY) and request.method == "GET":
            raise StopDownload(fail=False)  # the status is all a check needs
