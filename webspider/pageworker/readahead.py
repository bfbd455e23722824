"""Read each page on the page worker's core as its response arrives.

The last downloader middleware a response passes (so it sees the final one:
after redirects, decompression and the mirror's stored copy of a 304). It
hands each HTML page and stylesheet to the page worker
(webspider.pageworker.client) and waits for the page's links without
blocking the crawl, then gives the response that parse
(webspider.page.response.set_parsed_page): the spider, the page directives and the
reports find the page read. The worker keeps the page when the mirror may
store it, so it need not cross again.

Off (not configured) with the page worker. A page that arrives before the
worker is up, or that it could not read, is read in this process, as
without it. Link checks of other sites
(``webspider_check_only``) are not read at all.

A page that arrives while every other place of ``CONCURRENT_REQUESTS`` holds
a page waiting for the worker is read in this process too (stats
``webspider/page_worker/read_here_count``), if this process was busy less
than ``BUSY_AT_MOST`` of the last second: the worker is behind, no other
request can be downloaded meanwhile, so this process would only wait. A
busy one does not (the synthetic site with the mirror: this process is the
bound, busy ~97 %, and the pages it read there only made it slower). On
large pages (python3.11-doc: the worker busy ~90 % of the crawl, this
process ~65 %) 75-90 of 556 pages are read here and the crawl's wall is
10-25 % shorter (when nothing else needs the second core); on small pages
the worker mostly keeps up and this is rare. The output is the same either
way.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from webspider.keys import META_CHECK_ONLY
from webspider.mirror.options import MirrorOptions
from webspider.page.response import page_kind, set_parsed_page
from webspider.pageworker.client import PageWorker

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self


#: a page is read here only while this process was busy less than this
#: share of the last ``BUSY_WINDOW`` seconds (its CPU time against the wall)
BUSY_AT_MOST = 0.85
BUSY_WINDOW = 1.0


class ReadAheadMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        worker = crawler.get_extension(PageWorker)
        if worker is None:
            raise NotConfigured
        self.worker = worker
        #: the mirror stores 2xx pages: the worker keeps those
        self.mirror = MirrorOptions.of(crawler.settings).root is not None
        #: this many pages waiting for the worker: the next is read here
        self.read_here_at = max(crawler.settings.getint("CONCURRENT_REQUESTS") - 1, 1)
        #: the last window's start (monotonic, process CPU) and busy share
        self._window = (time.monotonic(), time.process_time())
        self._busy = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_response(self, request: Request, response: Response) -> Response:
        if (
            not 200 <= response.status < 300
            or not self.worker.ready
            or request.meta.get(META_CHECK_ONLY)
        ):
            return response
        kind = page_kind(response)
        if kind is None:
            return response
        worker = self.worker
        if worker.reading >= self.read_here_at and not self._busy_here():
            worker.read_here()
            return response
        page = await worker.parse(response, kind, keep=self.mirror)
        if page is not None:
            set_parsed_page(response, page)
        return response

    def _busy_here(self) -> bool:
        """Whether this process was busy (at least ``BUSY_AT_MOST``) over
        its last window; asked only while the worker is behind."""
        now, cpu = time.monotonic(), time.process_time()
        at, was = self._window
        if now - at >= BUSY_WINDOW:
            self._busy = (cpu - was) / (now - at)
            self._window = (now, cpu)
        return self._busy >= BUSY_AT_MOST
