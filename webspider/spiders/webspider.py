"""The webspider spider: visit every page reachable by links within scope.

``scrapy crawl webspider -a start_urls=https://example.org/``

Which links are candidates is declared in ``link_rules`` (tags and attributes,
see webspider.utils.html.LINK_RULES); which requests actually go out is for
the downloader middlewares (scope, robots.txt, politeness); what survives from
each page is for the spider middlewares (page directives, depth). The spider
itself only turns a page into an item and its links into requests — cheaply:
the page is parsed once (webspider.page), and links whose canonical URL the
scheduler has already seen are dropped before a Request is built.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.spidermiddlewares.httperror import HttpError

from webspider.config import CrawlConfig, apply_spider_arguments
from webspider.items import PageItem
from webspider.page import media_type, parsed_page, remember_response
from webspider.utils.html import LINK_RULES, LinkRule
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure
    from typing_extensions import Self

    from webspider.utils.html import ParsedPage

logger = logging.getLogger(__name__)

STATS_LINKS_EXTRACTED = "webspider/links/extracted_count"
STATS_LINKS_SEEN = "webspider/links/already_seen_count"
STATS_LINKS_UNSUPPORTED = "webspider/links/unsupported_scheme_count"
STATS_PAGES = "webspider/pages/fetched_count"
STATS_FAILED = "webspider/pages/failed_count"


class WebSpider(Spider):
    name = "webspider"

    #: The link-following rules: which elements and attributes give links.
    link_rules: tuple[LinkRule, ...] = LINK_RULES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: canonical URLs the scheduler has seen; set by URLDupeFilter.open()
        self.seen_urls: set[str] | None = None
        self.config: CrawlConfig

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        settings = crawler.settings
        apply_spider_arguments(settings, kwargs)
        config = CrawlConfig.from_settings(settings)
        if not settings.get("FEEDS"):
            feed = config.output / "pages.jsonl"
            settings.set(
                "FEEDS",
                {str(feed): {"format": "jsonlines", "overwrite": True}},
                priority="spider",
            )
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.config = config
        return spider

    async def start(self) -> AsyncIterator[Any]:
        for url in self.config.start_urls:
            yield Request(
                url,
                callback=self.parse,
                errback=self.on_error,
                meta={"depth": 0},
            )

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        page = parsed_page(response)
        yield self.page_item(response, page)
        if page is not None:
            yield from self.follow_links(response, page)

    def page_item(self, response: Response, page: ParsedPage | None) -> PageItem:
        meta = response.meta
        body = response.body
        # A body stopped after the headers (webspider.extensions.skipbodies):
        # the size is what the server announced, there is nothing to hash.
        stopped = "download_stopped" in response.flags
        item = PageItem(
            url=response.url,
            redirects=list(meta.get("redirect_urls", ())),
            status=response.status,
            depth=meta.get("depth", 0),
            round=meta.get("webspider_round", 0),
            referer=meta.get("webspider_referer"),
            content_type=media_type(response),
            size=announced_size(response) if stopped else len(body),
            content_hash="" if stopped else hashlib.sha256(body).hexdigest(),
            title=page.title if page is not None else None,
            links=len(page.links) if page is not None else 0,
            fetched_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        remember_response(item, response)
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_PAGES)
        return item

    def follow_links(self, response: Response, page: ParsedPage) -> Iterator[Request]:
        """Requests for the page's links that the scheduler has not seen."""
        seen = self.seen_urls
        depth = response.meta.get("depth", 0) + 1
        referer = response.url
        callback, errback = self.parse, self.on_error
        dropped = 0
        for link in page.links:
            if seen is not None and canonical_url(link.url) in seen:
                dropped += 1
                continue
            yield Request(
                link.url,
                callback=callback,
                errback=errback,
                meta={
                    "depth": depth,
                    "webspider_referer": referer,
                    "webspider_link_kind": link.kind,
                },
            )
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(STATS_LINKS_EXTRACTED, len(page.links))
            if dropped:
                stats.inc_value(STATS_LINKS_SEEN, dropped)
            if page.unsupported_links:
                stats.inc_value(STATS_LINKS_UNSUPPORTED, page.unsupported_links)

    def on_error(self, failure: Failure) -> None:
        """A request failed (HTTP error, download error, or filtered)."""
        error = failure.value
        if isinstance(error, IgnoreRequest) and not isinstance(error, HttpError):
            return  # a middleware decided not to fetch it; it was counted there
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_FAILED)
        logger.debug("Failed: %s", failure.getErrorMessage())


def announced_size(response: Response) -> int:
    """The Content-Length the server sent (0 when it sent none)."""
    raw = response.headers.get(b"Content-Length")
    try:
        return int(raw) if raw else 0
    except ValueError:
        return 0
