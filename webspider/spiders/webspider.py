"""The webspider spider: visit every page reachable by links within scope.

``scrapy crawl webspider -a start_urls=https://example.org/``

Which links are candidates is declared in ``link_rules`` (tags and attributes,
see webspider.page.links.LINK_RULES); which requests actually go out is for
the downloader middlewares (scope, robots.txt, politeness); what survives from
each page is for the spider middlewares (page directives, depth). The spider
itself only turns a page into an item and its links into requests — cheaply:
the page is parsed once (webspider.page.response), and links whose canonical URL the
scheduler has already seen, or that the page's directives forbid following,
are dropped before a Request is built.

A subclass decides about pages of its choosing in ``adjust_directives``
(see docs/page-directives.md); a program without a subclass connects to
the webspider.signals page_found / links_queued / page_complete instead.
"""

from __future__ import annotations

import hashlib
import logging
import time
from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.spidermiddlewares.httperror import HttpError

from webspider import signals, skips
from webspider.config import CrawlConfig, apply_spider_arguments, keep_start_urls
from webspider.exceptions import HostUnresolved
from webspider.frontier.options import set_shared_concurrent_items
from webspider.frontier.schedulerlookup import seen_urls
from webspider.frontier.seen import seen_many
from webspider.internals import check_internals
from webspider.items import PageItem
from webspider.keys import (
    META_CHECK_ONLY,
    META_REFERER,
    META_ROUND,
    STATS_LINKS_EXTRACTED,
    STATS_PAGES,
    STATS_PAGES_LINKS_CAPPED,
    STATS_PAGES_PARSE_BUDGET,
)
from webspider.page.links import LIMIT_LINKS, LINK_RULES, LinkRule
from webspider.page.options import PageOptions
from webspider.page.response import (
    directives_of,
    media_type,
    parsed_page,
    remember_response,
)
from webspider.reports.duplicates import DuplicateContent
from webspider.reports.options import ReportOptions
from webspider.requests import link_requests, page_request
from webspider.scope.hosts import HostScope
from webspider.scope.options import get_scope
from webspider.utils.url import host_of

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure
    from typing_extensions import Self

    from webspider.directives.parse import Directives
    from webspider.frontier.seen import SeenKeys
    from webspider.page.links import ParsedPage

logger = logging.getLogger(__name__)

STATS_LINKS_SEEN = "webspider/links/already_seen_count"
STATS_LINKS_UNSUPPORTED = "webspider/links/unsupported_scheme_count"
STATS_FAILED = "webspider/pages/failed_count"


class WebSpider(Spider):
    name = "webspider"

    #: The link-following rules: which elements and attributes give links.
    link_rules: tuple[LinkRule, ...] = LINK_RULES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: canonical URLs the scheduler has seen: asked of the crawl
        #: (webspider.frontier.schedulerlookup.seen_urls) on the first page
        self.seen_urls: SeenKeys | None = None
        #: the crawl's host scope, for dropping outside links early (None: keep all)
        self.link_scope: HostScope | None = None
        #: outside links already recorded as skipped (each is recorded once)
        self._outside: set[str] = set()
        #: (bound, host) of the pages read in part, logged once each
        self._limited: set[tuple[str, str]] = set()
        self.config: CrawlConfig
        # The page callbacks, bound once: every request carries these very
        # objects (requests.py, and the crawl state's getattr when it
        # rebuilds a request). Scrapy checks each callback for a generator
        # returning a value (inspect.getsource and ast.parse of the whole
        # method, ~1 ms) and caches the answer weakly keyed by the bound
        # method: a fresh bound method per request was asked again each
        # time the cached one had died with its request (~2 % of the crawl
        # process's CPU on small pages).
        self.parse = self.parse  # type: ignore[method-assign]
        self.on_error = self.on_error  # type: ignore[method-assign]
        #: now_iso's last second and its text
        self._now_second = -1
        self._now_text = ""

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        # In-process crawls (a script, scrapyd's runner with another command)
        # do not go through the crawl command's check; checked once per process.
        check_internals()
        settings = crawler.settings
        apply_spider_arguments(settings, kwargs)
        set_shared_concurrent_items(settings)
        config = CrawlConfig.from_settings(settings)
        keep_start_urls(settings, config.given_start_urls)
        # pages.jsonl is written by the scheduler, crash-safe
        # (webspider.frontier.pages), unless FEEDS / -o / -O are set
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.config = config
        # Links outside the scope are dropped before a Request is built (on a
        # documentation site most would-be requests are to other hosts):
        # the scope middleware stays the authority for every request (start
        # URLs, redirects, your own), this only saves building doomed ones.
        # Off when outside links are wanted (check_external) or scope is all.
        scope = get_scope(settings)
        if scope != "all" and not ReportOptions.of(settings).check_external:
            spider.link_scope = HostScope(
                scope, {host_of(url) for url in config.start_urls}
            )
        return spider

    async def start(self) -> AsyncIterator[Any]:
        for url in self.config.start_urls:
            yield page_request(self, url, depth=0)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if response.meta.get(META_CHECK_ONLY):
            return  # a link check (check_external): never followed or exported
        page = parsed_page(response, self)
        if page is not None and page.limited is not None:
            self.page_limited(response, page)
        item = self.page_item(response, page)
        yield item
        if page is not None and item.duplicate_of is None:
            if signals.listened(self.crawler, signals.links_extracted):
                self.crawler.signals.send_catch_log(
                    signals.links_extracted, response=response, page=page
                )
            yield from self.follow_links(response, page)

    def page_item(self, response: Response, page: ParsedPage | None) -> PageItem:
        meta = response.meta
        body = response.body
        # A body stopped after the headers (webspider.mirror.skipbodies):
        # the size is what the server announced, there is nothing to hash.
        stopped = "download_stopped" in response.flags
        digest = "" if stopped else page.content_hash if page is not None else None
        if digest is None:
            digest = hashlib.sha256(body).hexdigest()
        item = PageItem(
            url=response.url,
            redirects=list(meta.get("redirect_urls", ())),
            status=response.status,
            depth=meta.get("depth", 0),
            round=meta.get(META_ROUND, 0),
            referer=meta.get(META_REFERER),
            content_type=media_type(response),
            size=announced_size(response) if stopped else len(body),
            content_hash=digest,
            title=page.title if page is not None else None,
            links=len(page.links) if page is not None else 0,
            fetched_at=self.now_iso(),
        )
        item.duplicate_of = self.duplicate_of(response, item.content_hash)
        remember_response(item, response)
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_PAGES)
        return item

    def now_iso(self) -> str:
        """The time now, to the second, as ISO 8601 (UTC): formatted once a
        second, not once a page."""
        now = time.time()
        second = int(now)
        if second != self._now_second:
            self._now_second = second
            self._now_text = datetime.fromtimestamp(second, timezone.utc).isoformat()
        return self._now_text

    def page_limited(self, response: Response, page: ParsedPage) -> None:
        """A page read in part: it has more links than WEBSPIDER_PAGE_MAX_LINKS,
        or reading it took WEBSPIDER_PAGE_PARSE_BUDGET (the links found until
        then are followed). Counted; logged once per host and bound."""
        capped = page.limited == LIMIT_LINKS
        if self.crawler.stats is not None:
            key = STATS_PAGES_LINKS_CAPPED if capped else STATS_PAGES_PARSE_BUDGET
            self.crawler.stats.inc_value(key)
        seen = (page.limited or "", host_of(response.url))
        if seen in self._limited:
            return
        self._limited.add(seen)
        options = PageOptions.of(self.crawler.settings)
        if capped:
            logger.warning(
                "%s has more than %d links: the first %d are followed "
                "(WEBSPIDER_PAGE_MAX_LINKS; pages of this host cut short "
                "are counted in %s)",
                response.url,
                options.max_links,
                options.max_links,
                STATS_PAGES_LINKS_CAPPED,
            )
        else:
            logger.warning(
                "Reading %s took more than %g s: the %d links found by then are "
                "followed (WEBSPIDER_PAGE_PARSE_BUDGET; pages of this host cut "
                "short are counted in %s)",
                response.url,
                options.parse_budget,
                len(page.links),
                STATS_PAGES_PARSE_BUDGET,
            )

    def duplicate_of(self, response: Response, content_hash: str) -> str | None:
        """URL of an earlier page with the same content (its links are not
        followed again), or None; see webspider.reports.duplicates."""
        index = self._content_index
        return index.duplicate_of(response, content_hash) if index else None

    @cached_property
    def _content_index(self) -> DuplicateContent | None:
        # Looked up once, on the first page (extensions exist by then).
        return self.crawler.get_extension(DuplicateContent)

    def follow_links(self, response: Response, page: ParsedPage) -> Iterator[Request]:
        """Requests for the page's links that the scheduler has not seen and
        the page's directives allow following."""
        seen = self.seen_urls
        if seen is None:
            seen = self.seen_urls = seen_urls(self.crawler)
        depth = response.meta.get("depth", 0) + 1
        referer = response.url
        link_request = link_requests(self, depth=depth, referer=referer)
        dropped = 0
        directives = directives_of(response)
        nofollow_links = directives.nofollow_links if directives is not None else None
        nofollow = directives is not None and directives.nofollow
        nofollow_reason = skips.NOFOLLOW if nofollow else skips.NOFOLLOW_LINK
        scope = self.link_scope
        outside = self._outside
        skipped: list[tuple[str, str]] = []  # recorded at the end, stats once
        links = page.links
        keys = page.link_keys()  # worked out once: the reports use them too
        # one call for the page: the crawl state checks a batch at once
        known = seen_many(seen, keys) if seen is not None else [False] * len(keys)
        # asked before the first request is queued: a link repeated on the
        # page is dropped here, as the seen-set would have dropped it
        requested: set[str] = set()
        for link, key, was_seen in zip(links, keys, known, strict=True):
            if was_seen or key in requested:
                dropped += 1
                continue
            if key in outside:
                continue  # out of scope, recorded when first found
            if scope is not None and not self.link_in_scope(link.url):
                outside.add(key)
                skipped.append((link.url, skips.SCOPE))
                continue
            # Skipped here rather than by the directives middleware so that
            # no Request is built for them (same reasons as there).
            if nofollow or (nofollow_links and key in nofollow_links):
                skipped.append((link.url, nofollow_reason))
                continue
            requested.add(key)
            yield link_request(link.url, link.kind)
        skips.record_skips(self.crawler, skipped, referer)
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(STATS_LINKS_EXTRACTED, len(page.links))
            if dropped:
                stats.inc_value(STATS_LINKS_SEEN, dropped)
            if page.unsupported_links:
                stats.inc_value(STATS_LINKS_UNSUPPORTED, page.unsupported_links)

    def link_in_scope(self, url: str) -> bool:
        """Whether a link found on a page is worth a Request (its host is in
        scope). Override together with ScopeMiddleware.should_follow."""
        return self.link_scope is None or self.link_scope.allows(host_of(url))

    def on_error(self, failure: Failure) -> None:
        """A request failed (HTTP error, download error, or filtered)."""
        error = failure.value
        request = getattr(failure, "request", None)
        if request is not None:
            self.crawler.signals.send_catch_log(
                signals.request_failed, request=request, failure=failure
            )
        if isinstance(error, IgnoreRequest) and not isinstance(
            error, (HttpError, HostUnresolved)
        ):
            return  # a middleware decided not to fetch it; it was counted there
        if request is not None and request.meta.get(META_CHECK_ONLY):
            return  # a link check, not a page: reported as a broken link
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_FAILED)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("Failed: %s", failure.getErrorMessage())
        if not isinstance(error, HttpError) and signals.listened(
            self.crawler, signals.page_complete
        ):
            # No response, so no spider middleware sees this page end (for
            # HTTP errors PageEventsMiddleware sends page_complete).
            self.crawler.signals.send_catch_log(
                signals.page_complete,
                url=request.url if request is not None else None,
                status=None,
                error=f"{type(error).__name__}: {failure.getErrorMessage()}",
            )

    # -- the user's decisions ---------------------------------------------------
    def adjust_directives(self, response: Response, directives: Directives) -> None:
        """Override to decide about pages yourself: called once per response
        that reaches the spider, after the page's own robots directives were
        read into ``directives`` and before the page_found signal is sent.
        Set ``directives.nofollow`` / ``directives.noindex`` (true tightens,
        false loosens), or ``directives.dont_follow(url)`` /
        ``directives.follow(url)`` for single links; the crawl then acts
        exactly as if the page had said so. Does nothing by default."""


def announced_size(response: Response) -> int:
    """The Content-Length the server sent (0 when it sent none)."""
    raw = response.headers.get(b"Content-Length")
    try:
        return int(raw) if raw else 0
    except ValueError:
        return 0
