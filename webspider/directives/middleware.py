"""Honour what a page says about itself: noindex, nofollow, rel=nofollow.

Before a response reaches its callback, the page's directives are read from
``<meta name="robots">``/``<meta name="webspider">`` (the product token of
ROBOTSTXT_USER_AGENT, else USER_AGENT: webspider.config.product_token), the
``X-Robots-Tag`` header and ``rel="nofollow"`` links (see
webspider.directives.parse); an error response (status >= 400 that reaches
the spider through HTTPERROR_ALLOWED_CODES) is noindex and nofollow. Then
the spider's ``adjust_directives(response, directives)`` and the
``webspider.signals.page_found`` handlers may tighten or loosen them. The
result is kept with the response (``webspider.page.response.directives_of``), so the
spider builds no requests for a nofollow page at all; this middleware also
filters whatever a callback yields from that page:

- nofollow: every request is dropped (skip reason ``nofollow``);
- a nofollow link: its request is dropped (skip reason ``nofollow_link``);
- noindex: every item is dropped, or, with WEBSPIDER_EXPORT_NOINDEX, kept
  with ``noindex`` set to true (pipelines that keep page content, such as
  the mirror, must then skip it).

Settings: WEBSPIDER_DIRECTIVES_ENABLED, WEBSPIDER_DIRECTIVES_META,
WEBSPIDER_DIRECTIVES_HEADER, WEBSPIDER_DIRECTIVES_REL (each source),
ROBOTSTXT_OBEY (false turns all three sources off; the spider's hook, the
signal and the error-page rule stay), WEBSPIDER_EXPORT_NOINDEX.
Stats: ``webspider/directives/noindex_count[/<source>]``,
``webspider/directives/nofollow_count[/<source>]`` (source: meta, header,
error, user), ``webspider/directives/item_dropped_count``,
``webspider/directives/noindex_exported_count``, and the skip counts
``webspider/skipped/url_count/nofollow`` and ``…/nofollow_link``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from webspider import signals, skips
from webspider.config import get_product_token
from webspider.directives.options import DirectivesOptions
from webspider.directives.parse import Directives, header_directives, meta_directives
from webspider.keys import META_CHECK_ONLY
from webspider.page.response import directives_of, parsed_page, set_directives
from webspider.spidermw import OutputFilter
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

STATS_NOINDEX = "webspider/directives/noindex_count"
STATS_NOFOLLOW = "webspider/directives/nofollow_count"
STATS_ITEM_DROPPED = "webspider/directives/item_dropped_count"
STATS_NOINDEX_EXPORTED = "webspider/directives/noindex_exported_count"

#: the source dimension of the noindex/nofollow counts
META = "meta"
HEADER = "header"
ERROR = "error"
USER = "user"


class PageDirectivesMiddleware(OutputFilter, BaseSpiderMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        options = DirectivesOptions.of(settings)
        if not options.enabled:
            raise NotConfigured
        self.use_meta = options.meta
        self.use_header = options.header
        self.use_rel = options.rel
        self.export_noindex = options.export_noindex
        #: the name a page uses to speak to us alone (<meta name="webspider">)
        self.product = get_product_token(settings) or "webspider"

    # -- deciding ---------------------------------------------------------------
    def page_directives(self, response: Response) -> Directives:
        """What the page itself says (before the spider and handlers adjust
        it); override to read other sources."""
        directives = Directives()
        if response.status >= 400:
            # A failing page's content is the server's, not the site's: as
            # the original design of this spider did, neither keep it nor
            # follow its links (a handler can still loosen this).
            directives.noindex = directives.nofollow = True
            self._count(directives, ERROR)
            return directives
        if self.use_header:
            values = response.headers.getlist(b"X-Robots-Tag")
            if values:
                said = header_directives(
                    (v.decode("latin-1") for v in values), self.product
                )
                self._count(said, HEADER)
                directives.merge(said)
        page = (
            parsed_page(response, self.crawler.spider)
            if self.use_meta or self.use_rel
            else None
        )
        if page is not None:
            if self.use_meta and page.metas:
                said = meta_directives(page.metas, self.product)
                self._count(said, META)
                directives.merge(said)
            if self.use_rel:
                directives.nofollow_links.update(
                    canonical_url(link.url) for link in page.links if link.nofollow
                )
        return directives

    def process_spider_input(self, response: Response) -> None:
        if response.meta.get(META_CHECK_ONLY):
            return  # a link check of an outside URL, not a page of the crawl
        directives = self.page_directives(response)
        said = (directives.noindex, directives.nofollow)
        spider = self.crawler.spider
        adjust = getattr(spider, "adjust_directives", None)
        if adjust is not None:
            adjust(response, directives)
        if signals.listened(self.crawler, signals.page_found):
            self.crawler.signals.send_catch_log(
                signals.page_found,
                response=response,
                depth=response.meta.get("depth", 0),
                directives=directives,
            )
        self._count_final(directives, said)
        set_directives(response, directives)

    def skip_reason(self, request: Request, directives: Directives) -> str | None:
        """Why a request from a page with ``directives`` must not go out
        (a webspider.skips reason), or None to let it through."""
        if directives.nofollow:
            return skips.NOFOLLOW
        if directives.nofollow_links and (
            canonical_url(request.url) in directives.nofollow_links
        ):
            return skips.NOFOLLOW_LINK
        return None

    # -- filtering --------------------------------------------------------------
    def get_processed_request(
        self, request: Request, response: Response | None
    ) -> Request | None:
        if response is None or (directives := directives_of(response)) is None:
            return request
        if not directives.nofollow and not directives.nofollow_links:
            return request  # the common case, per request: keep it cheap
        reason = self.skip_reason(request, directives)
        if reason is None:
            return request
        skips.record_skip(self.crawler, request.url, reason, response.url)
        return None

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        if response is None or (directives := directives_of(response)) is None:
            return item
        if not directives.noindex:
            return item
        stats = self.crawler.stats
        if not self.export_noindex:
            if stats is not None:
                stats.inc_value(STATS_ITEM_DROPPED)
            return None
        adapter = ItemAdapter(item)
        if isinstance(item, dict) or "noindex" in adapter.field_names():
            adapter["noindex"] = True
        if stats is not None:
            stats.inc_value(STATS_NOINDEX_EXPORTED)
        return item

    # -- stats ------------------------------------------------------------------
    def _count(self, directives: Directives, source: str) -> None:
        stats = self.crawler.stats
        if stats is None:
            return
        if directives.noindex:
            stats.inc_value(f"{STATS_NOINDEX}/{source}")
        if directives.nofollow:
            stats.inc_value(f"{STATS_NOFOLLOW}/{source}")

    def _count_final(self, directives: Directives, said: tuple[bool, bool]) -> None:
        stats = self.crawler.stats
        if stats is None:
            return
        if directives.noindex:
            stats.inc_value(STATS_NOINDEX)
            if not said[0]:
                stats.inc_value(f"{STATS_NOINDEX}/{USER}")
        if directives.nofollow:
            stats.inc_value(STATS_NOFOLLOW)
            if not said[1]:
                stats.inc_value(f"{STATS_NOFOLLOW}/{USER}")
