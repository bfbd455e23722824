"""Update an existing mirror with conditional requests.

For a URL the mirror already holds, the request carries ``If-None-Match``
(the stored ETag) and ``If-Modified-Since`` (the stored Last-Modified); a
``304 Not Modified`` answer is turned into the stored page (status 200,
flag ``webspider_not_modified``), so the spider still follows its links and
the whole site is reached, while nothing is downloaded or written again.
The stored page is given back with its links as the site wrote them (the
original copy, or the converted links turned back into absolute URLs).

Settings: ``WEBSPIDER_MIRROR_UPDATE`` (default true); active only when the
mirror is. Meta keys honoured: ``webspider_dont_mirror`` (no conditional
headers). Stats: ``webspider/mirror/not_modified_count``,
``webspider/mirror/conditional_count``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.http import Headers
from scrapy.responsetypes import responsetypes

from webspider.keys import META_CONDITIONAL, META_DONT_MIRROR, NOT_MODIFIED_FLAG
from webspider.mirror.links import unconvert
from webspider.mirror.paths import original_path
from webspider.mirror.stats import STATS_NOT_MODIFIED
from webspider.mirror.store import HTML, MirrorStore, header

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from webspider.mirror.entry import Entry

STATS_CONDITIONAL = "webspider/mirror/conditional_count"


class MirrorUpdateMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        store = crawler.get_extension(MirrorStore)
        if store is None or not store.update:
            raise NotConfigured
        self.store = store

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def should_revalidate(self, request: Request) -> bool:
        """Whether to ask the server if ``request``'s stored copy changed."""
        return (
            request.method == "GET"
            and not request.meta.get(META_DONT_MIRROR)
            and b"If-None-Match" not in request.headers
            and b"If-Modified-Since" not in request.headers
        )

    def process_request(self, request: Request) -> None:
        asked_for = request.meta.get(META_CONDITIONAL)
        if asked_for is not None and asked_for != request.url:
            # A redirect copied our headers to another URL: they describe
            # the stored copy of the first one, not this one.
            del request.meta[META_CONDITIONAL]
            for name in (b"If-None-Match", b"If-Modified-Since"):
                request.headers.pop(name, None)
        if self.store.run == 1:
            # the mirror's first crawl: whatever it stored, it fetched itself
            # (asked again, as fetched_by_this_run says, without validators),
            # so no request needs its stored copy looked up
            return
        if not self.should_revalidate(request):
            return
        entry = self.store.stored(request.url)
        if entry is None or not (entry.etag or entry.last_modified):
            return
        if self.store.fetched_by_this_run(entry):
            # a refetch of this crawl (a later round, or again after a kill
            # before the page was acknowledged), not an update: the page is
            # asked for as the uninterrupted crawl asked for it
            return
        if entry.etag:
            request.headers[b"If-None-Match"] = entry.etag
        if entry.last_modified:
            request.headers[b"If-Modified-Since"] = entry.last_modified
        request.meta[META_CONDITIONAL] = request.url
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_CONDITIONAL)

    def process_response(self, request: Request, response: Response) -> Response:
        if response.status != 304 or request.meta.get(META_CONDITIONAL) != request.url:
            return response
        entry = self.store.stored(request.url)
        if entry is None:  # deleted since the request went out
            return response
        self.not_modified(response, entry)
        headers = Headers(response.headers)
        if entry.content_type:
            headers[b"Content-Type"] = entry.content_type
        body = self.stored_body(entry, response.url)
        cls = responsetypes.from_args(headers=headers, url=response.url, body=body)
        return cls(
            url=response.url,
            status=200,
            headers=headers,
            body=body,
            flags=[*response.flags, NOT_MODIFIED_FLAG],
            request=request,
            protocol=response.protocol,
            ip_address=response.ip_address,
        )

    def not_modified(self, response: Response, entry: Entry) -> None:
        """A 304: keep the stored file, refresh its validators."""
        store = self.store
        assert store.state is not None
        etag = header(response, b"ETag") or entry.etag
        modified = header(response, b"Last-Modified") or entry.last_modified
        if (etag, modified) != (entry.etag, entry.last_modified):
            entry.etag, entry.last_modified = etag, modified
            store.state.update(entry)
        store.inc(STATS_NOT_MODIFIED)

    def stored_body(self, entry: Entry, url: str) -> bytes:
        """The stored bytes of ``entry`` as the site sent them, near enough
        to extract the same links: converted links are turned back into the
        absolute URLs they stand for. Empty for what has no links."""
        store = self.store
        assert store.tree is not None and store.state is not None
        if not entry.kind:
            return b""  # nothing with links: the spider needs no body
        tree = store.holder(entry) or store.tree
        body = tree.read(entry.path) or b""
        if not entry.converted:
            return body
        original = tree.read(original_path(entry.path))
        if original is not None:
            return original
        return unconvert(
            body,
            entry,
            store.state,
            page_url=url,
            encoding=entry.encoding,
            html=entry.kind == HTML,
        )
