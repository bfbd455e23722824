"""Depth of every request, and the depth cap: defer (or drop) what lies beyond.

Replaces Scrapy's DepthMiddleware. A request found on a page of depth d has
depth d + 1 (0 with ``depth_reset``, as in Scrapy 2.18+) and the page's round.
With a cap (``-a max_depth=N``), a link beyond it is not requested in this
round: it is deferred to the scheduler's frontier (counted once per URL),
from which a later round starts at depth 0 — or, with ``-a defer=0``,
dropped (reason ``depth_limit``, as Scrapy's DEPTH_LIMIT does). A deferral
is not a skip: only the URLs still deferred when the crawl ends are
recorded as skipped (reason ``depth``, by the scheduler). Page
requisites of the pages fetched (images, stylesheets, scripts, frames) are
never deferred: they belong to their page. Deferred URLs do not enter the
seen-set, so a URL deferred here is still fetched in this round if it is met
again at a permitted depth (e.g. as another page's requisite).

Runs after the other spider middlewares (low order number), so that a link
another middleware drops for good is not deferred; links out of scope are
passed on for the scope middleware to skip rather than deferred.

Settings: WEBSPIDER_DEPTH_ENABLED, WEBSPIDER_DEPTH_MAX, WEBSPIDER_DEPTH_DEFER.
Meta keys: depth, depth_reset (popped), webspider_round, webspider_link_kind.
Stats: webspider/depth/* (STATS_* below), webspider/skipped/url_count/depth_limit.
"""

from __future__ import annotations

import logging
from functools import cached_property
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from webspider import skips
from webspider.frontier.options import DepthOptions
from webspider.frontier.scheduler import StateScheduler
from webspider.frontier.schedulerlookup import check_scheduler, round_scheduler
from webspider.keys import META_LINK_KIND, META_ROUND
from webspider.page.links import REQUISITE
from webspider.scope.middleware import ScopeMiddleware
from webspider.spidermw import OutputFilter

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

STATS_DEFERRED = "webspider/depth/deferred_count"
STATS_DROPPED = "webspider/depth/dropped_count"
STATS_DEEPEST = "webspider/depth/deepest"
STATS_PAGES = "webspider/depth/page_count"  # /<round>


class DepthMiddleware(OutputFilter, BaseSpiderMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        options = DepthOptions.of(settings)
        if not options.enabled:
            raise NotConfigured
        check_scheduler(settings)
        self.max_depth = options.max_depth
        self.defer = options.defer

    @property
    def scheduler(self) -> StateScheduler | None:
        return round_scheduler(self.crawler)

    # -- policy -----------------------------------------------------------------
    def beyond_cap(self, request: Request, response: Response) -> bool:
        """Whether ``request`` (depth already set) must wait for a later round."""
        if self.max_depth is None or request.meta["depth"] <= self.max_depth:
            return False
        if request.meta.get(META_LINK_KIND) == REQUISITE:
            # A requisite belongs to the page that embeds it; the page was
            # fetched, so it is within the cap or itself a requisite.
            return False
        return self.in_scope(request)

    def in_scope(self, request: Request) -> bool:
        """Out-of-scope links are not deferred: they would only be skipped
        (reason scope) when their round came."""
        scope = self._scope
        return scope is None or scope.should_follow(request)

    @cached_property
    def _scope(self) -> ScopeMiddleware | None:
        # Looked up on first use: the engine (and its downloader) is built
        # after the spider middlewares.
        return self.crawler.get_downloader_middleware(ScopeMiddleware)

    # -- the flow -----------------------------------------------------------------
    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        # Depth 1 must wait until every start URL is queued (the scheduler's
        # level barrier); the engine consumes start() lazily.
        scheduler = self.scheduler
        if scheduler is not None:
            scheduler.start_pending = True
        try:
            async for o in super().process_start(start):
                yield o
        finally:
            # (the engine asks the scheduler again right after start() ends)
            if scheduler is not None:
                scheduler.start_pending = False

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        # one item per page fetched: count the page in its round
        stats = self.crawler.stats
        if response is not None and stats is not None:
            meta = response.meta
            stats.inc_value(f"{STATS_PAGES}/{meta.get('webspider_round', 0)}")
            stats.max_value(STATS_DEEPEST, meta.get("depth", 0))
        return item

    def get_processed_request(
        self, request: Request, response: Response | None
    ) -> Request | None:
        meta = request.meta
        depth_reset = meta.pop("depth_reset", False)
        if response is None:  # a start request
            meta.setdefault("depth", 0)
            return request
        meta["depth"] = 0 if depth_reset else response.meta.get("depth", 0) + 1
        meta[META_ROUND] = response.meta.get(META_ROUND, 0)
        if not self.beyond_cap(request, response):
            return request
        stats = self.crawler.stats
        scheduler = self.scheduler
        if self.defer and scheduler is not None and scheduler.deferring:
            # Not a skip: a later round fetches it. What is still deferred
            # when the crawl ends is recorded as skipped then (reason depth,
            # by the scheduler, from the frontier).
            if scheduler.defer(request) and stats is not None:
                stats.inc_value(STATS_DEFERRED)
        else:
            if stats is not None:
                stats.inc_value(STATS_DROPPED)
            skips.skip_request(self.crawler, request, skips.DEPTH_LIMIT)
        return None
