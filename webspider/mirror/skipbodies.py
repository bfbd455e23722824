"""Without a mirror, don't download bodies nothing reads.

With ``mirror=0`` only HTML pages (for their links and metadata) and
stylesheets (for their ``url(...)`` links) need a body. For everything else
the spider requested (images, PDFs, archives…) the download is stopped as
soon as the headers arrive (Scrapy's ``headers_received`` signal and
``StopDownload(fail=False)``) — the modern form of a HEAD before the GET, in
one request. The item still records status, content type and the size the
server announced (``Content-Length``); its ``content_hash`` is empty.

Settings: ``WEBSPIDER_SKIP_BODIES_ENABLED`` (default true; only active when
the mirror is off). Stats: ``webspider/skip_bodies/stopped_count``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured, StopDownload

from webspider.keys import META_KEEP_BODY
from webspider.mirror.options import MirrorOptions
from webspider.page.response import CSS_TYPES, HTML_TYPES, headers_media_type

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Headers
    from typing_extensions import Self

STATS_STOPPED = "webspider/skip_bodies/stopped_count"

#: media types whose bodies the crawl reads
NEEDED_TYPES = HTML_TYPES | CSS_TYPES


class SkipBodies:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = MirrorOptions.of(settings)
        if not options.skip_bodies:
            raise NotConfigured
        if options.root is not None:
            raise NotConfigured  # the mirror needs every body
        crawler.signals.connect(self.headers_received, signal=signals.headers_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def needs_body(self, request: Request, headers: Headers) -> bool:
        """Whether the crawl reads the body of ``request``'s response.

        Only the spider's own page requests are stopped: robots.txt,
        sitemaps and whatever other components request keep their bodies."""
        spider = self.crawler.spider
        if spider is None or request.callback != getattr(spider, "parse", None):
            return True
        if request.meta.get(META_KEEP_BODY):
            return True
        if not headers.get(b"Content-Type"):
            return True  # unknown: it may be HTML
        return headers_media_type(headers) in NEEDED_TYPES

    def headers_received(
        self, headers: Headers, request: Request, **kwargs: Any
    ) -> None:
        if not self.needs_body(request, headers):
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value(STATS_STOPPED)
            raise StopDownload(fail=False)
