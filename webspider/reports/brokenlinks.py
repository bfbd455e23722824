"""Find broken links and write ``<output>/broken-links.jsonl``.

A link is broken when its target answers 4xx or 5xx (after Scrapy's
retries), cannot be downloaded (DNS, refused, reset, timeout, TLS), redirects
too often or in a loop, or redirects to a scheme webspider does not fetch.
One JSON line per broken URL, with every page that links to it and the
link's text (``alt`` for images); see docs/reports.md for the fields.

The ledger (webspider.reports.links) is kept in the crawl state as records:
memory stays flat, a resumed crawl (after Ctrl-C, kill -9…) continues it and
ends with the same file an uninterrupted crawl writes; a new crawl on a
state whose crawl finished starts it empty. Without a crawl state (another
SCHEDULER) it is kept in memory.

The file is rewritten whole, streamed from the ledger (temp file + rename,
never half-written), when the crawl opens, every WEBSPIDER_REPORT_INTERVAL
seconds when something changed, and when it closes for any reason (when the
crawl state closes, webspider.signals.crawl_state_closing) — so it is
complete up to the last rewrite even if the crawl is killed.

Settings: WEBSPIDER_BROKEN_LINKS_ENABLED, WEBSPIDER_BROKEN_LINKS_MAX_REFERRERS,
WEBSPIDER_CHECK_ANCHORS, WEBSPIDER_CHECK_EXTERNAL, WEBSPIDER_REPORT_INTERVAL.
Missing anchors (WEBSPIDER_CHECK_ANCHORS) are kept in the crawl state too
(webspider.reports.anchors), continued by a resumed crawl.
Meta keys read: ``redirect_urls``, ``redirect_reasons``,
``webspider_check_only`` (the URL is outside the scope).
Stats: ``webspider/broken/url_count`` (``/internal``, ``/external``),
``webspider/broken/status_count/<code>``, ``webspider/broken/error_count/<code>``,
``webspider/broken/missing_anchor_count``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured
from scrapy.http.request import NO_CALLBACK
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.asyncio import create_looping_call

from webspider import signals, skips
from webspider.config import get_output_dir
from webspider.keys import (
    BROKEN_LINKS_FILE,
    META_CHECK_ONLY,
    META_REDIRECTED_OUT,
    STATS_BROKEN,
    STATS_BROKEN_INTERNAL,
    STATS_STATE_RESUMED,
)
from webspider.page.response import is_html
from webspider.reports import errors
from webspider.reports.anchors import AnchorLedger, page_anchors
from webspider.reports.links import LinkLedger, Outcome
from webspider.reports.options import ReportOptions
from webspider.storage import crawl_stop, stop_crawl
from webspider.utils.atomic import open_atomic
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure
    from typing_extensions import Self

    from webspider.page.links import ParsedPage
    from webspider.records import RecordStore

logger = logging.getLogger(__name__)

STATS_BROKEN_EXTERNAL = "webspider/broken/url_count/external"
STATS_BROKEN_STATUS = "webspider/broken/status_count"
STATS_BROKEN_ERROR = "webspider/broken/error_count"
STATS_MISSING_ANCHORS = "webspider/broken/missing_anchor_count"

#: Skip reasons decided after the seen-set (in downloader middlewares): such
#: a URL is never requested later, so its referrers can be forgotten.
FINAL_SKIP_REASONS = frozenset(
    {
        skips.SCOPE,
        skips.INCLUDE,
        skips.EXCLUDE,
        skips.EXCLUDE_RE,
        skips.ROBOTS,
        # not robots_unreachable: such a link is reported broken (the request
        # fails with RobotsUnreachable), with its referrers
    }
)


class BrokenLinks:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = ReportOptions.of(settings)
        if not options.broken_links:
            raise NotConfigured
        max_referrers = options.max_referrers
        #: in memory until the crawl state opens (and without one)
        self.ledger = LinkLedger(None, max_referrers)
        self.anchors = AnchorLedger(max_referrers) if options.check_anchors else None
        self.check_external = options.check_external
        self.path = get_output_dir(settings) / BROKEN_LINKS_FILE
        self.interval = options.report_interval
        self._written: tuple[int, int] | None = None
        self._task: Any = None
        #: the ledger is in the crawl state
        self.stored = False
        connect = crawler.signals.connect
        connect(self.crawl_state_opened, signal=signals.crawl_state_opened)
        connect(self.crawl_state_committing, signal=signals.crawl_state_committing)
        connect(self.crawl_state_closing, signal=signals.crawl_state_closing)
        connect(self.links_extracted, signal=signals.links_extracted)
        connect(self.request_failed, signal=signals.request_failed)
        connect(self.urls_skipped, signal=signals.urls_skipped)
        connect(self.response_received, signal=scrapy_signals.response_received)
        connect(self.request_dropped, signal=scrapy_signals.request_dropped)
        connect(self.spider_opened, signal=scrapy_signals.spider_opened)
        connect(self.spider_closed, signal=scrapy_signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- links ------------------------------------------------------------------
    def links_extracted(self, response: Response, page: ParsedPage) -> None:
        referrer = response.url
        # held until the crawl state commits (LinkLedger.flush): looked up
        # and written with the other pages of the commit
        keys = page.link_keys()
        self.ledger.add_parsed(referrer, keys, page.links)
        if not self.stored:
            self.ledger.flush()  # in memory: nothing to batch
        anchors = self.anchors
        if anchors is not None:
            for link, key in zip(page.links, keys, strict=True):
                if link.fragment or link.more_fragments:
                    if link.fragment:
                        anchors.add_link(
                            key,
                            link.url,
                            link.fragment,
                            (referrer, link.text, link.tag),
                        )
                    for fragment, text in (link.more_fragments or {}).items():
                        anchors.add_link(
                            key,
                            link.url,
                            fragment,
                            (referrer, page.text(text), link.tag),
                        )
            if page.local_fragments:
                # href="#x" points into the page itself (or its <base>)
                base = page.base_url.partition("#")[0]
                key = canonical_url(base)
                first_text: dict[str, str | int] = {}
                for fragment, text in page.local_fragments:
                    first_text.setdefault(fragment, text)
                for fragment, text in first_text.items():
                    anchors.add_link(
                        key, base, fragment, (referrer, page.text(text), "a")
                    )
            # Not only for anchors: a page that links a redirect hop already
            # found broken makes that hop a reported broken link.
            self._update_stats()
        elif not self.stored:
            self._update_stats()

    # -- outcomes -----------------------------------------------------------------
    def response_received(self, response: Response, request: Request) -> None:
        if request.callback is NO_CALLBACK:
            return  # robots.txt and other downloads that are not links
        status = response.status
        if 200 <= status < 300:
            for url in self._chain(request):
                self.ledger.good(canonical_url(url))
            if (
                self.anchors is not None
                and not request.meta.get(META_CHECK_ONLY)
                and is_html(response)
            ):
                text = getattr(response, "text", "")
                self.anchors.page_fetched(
                    canonical_url(response.url), page_anchors(text)
                )
            return
        error = detail = None
        if 300 <= status < 400:
            # RedirectMiddleware hands a 3xx on when it will not follow it.
            raw = response.headers.get(b"Location")
            location = raw.decode("latin-1") if raw else None
            error = errors.classify_redirect(location)
            detail = f"Location: {location}" if location else "no Location header"
        self.broken(request, status, error, detail)

    def request_failed(self, request: Request, failure: Failure) -> None:
        exc = failure.value
        if exc is None or isinstance(exc, HttpError):
            return  # seen in response_received
        code = errors.classify_error(exc)
        if code is not None:
            self.broken(request, None, code, errors.describe(exc))

    def request_dropped(self, request: Request) -> None:
        redirects = request.meta.get("redirect_urls")
        if not redirects:
            return
        # A redirect to a URL already requested: the seen-set dropped it.
        target = canonical_url(request.url)
        keys = [canonical_url(url) for url in redirects]
        if target in keys:
            reasons = request.meta.get("redirect_reasons") or [None]
            status = reasons[-1] if isinstance(reasons[-1], int) else None
            detail = " → ".join([*redirects, request.url])
            self.broken(request, status, errors.REDIRECT_LOOP, detail)
            return
        meta = request.meta
        internal = not meta.get(META_CHECK_ONLY) or bool(meta.get(META_REDIRECTED_OUT))
        for url, key in zip(redirects, keys, strict=True):
            self.ledger.redirected(key, url, target, internal)
        self._update_stats()

    def urls_skipped(
        self, skipped: list[tuple[str, str]], referer: str | None = None
    ) -> None:
        for url, reason in skipped:
            self.url_skipped(url, reason, referer)

    def url_skipped(self, url: str, reason: str, referer: str | None = None) -> None:
        if reason in FINAL_SKIP_REASONS and not (
            reason == skips.SCOPE and self.check_external
        ):
            self.ledger.skipped(canonical_url(url))

    def broken(
        self,
        request: Request,
        status: int | None,
        error: str | None,
        detail: str | None,
    ) -> None:
        """Record ``request`` (and the redirects that led to it) as broken."""
        meta = request.meta
        internal = not meta.get(META_CHECK_ONLY)
        # An internal URL redirected out of the scope: the hops are internal.
        hops_internal = internal or bool(meta.get(META_REDIRECTED_OUT))
        final = request.url
        before = self.ledger.broken_count
        for i, url in enumerate(self._chain(request)):
            outcome = Outcome(
                url=url,
                status=status,
                error=error,
                detail=detail,
                internal=internal if url == final else hops_internal,
                redirected_to=final if url != final else None,
                requested=i == 0,
            )
            self.ledger.broken(canonical_url(url), outcome)
        stats = self.crawler.stats
        if stats is not None and self.ledger.broken_count > before:
            if status is not None:
                stats.inc_value(f"{STATS_BROKEN_STATUS}/{status}")
            if error is not None:
                stats.inc_value(f"{STATS_BROKEN_ERROR}/{error}")
        self._update_stats()

    @staticmethod
    def _chain(request: Request) -> list[str]:
        return [*request.meta.get("redirect_urls", ()), request.url]

    # -- the file -------------------------------------------------------------------
    @property
    def missing_anchors(self) -> int:
        return self.anchors.missing_count if self.anchors is not None else 0

    def records(self, max_referrers: int | None = None) -> Iterator[dict[str, Any]]:
        """Every broken link, as written to broken-links.jsonl, streamed."""
        yield from self.ledger.records(max_referrers)
        if self.anchors is not None:
            yield from self.anchors.records()

    def _update_stats(self) -> None:
        stats = self.crawler.stats
        if stats is None:
            return
        ledger, anchors = self.ledger, self.missing_anchors
        stats.set_value(STATS_BROKEN, ledger.broken_count + anchors)
        stats.set_value(STATS_BROKEN_INTERNAL, ledger.broken_internal + anchors)
        stats.set_value(STATS_BROKEN_EXTERNAL, ledger.broken_external)
        if anchors:
            stats.set_value(STATS_MISSING_ANCHORS, anchors)

    def flush(self, force: bool = False) -> None:
        if crawl_stop(self.crawler) is not None:
            return  # the crawl stopped: the file stays as it was
        self.ledger.flush()  # the links held since the last commit count
        version = (
            self.ledger.version,
            self.anchors.version if self.anchors is not None else 0,
        )
        if not force and version == self._written:
            return
        try:
            with open_atomic(self.path) as fh:
                for record in self.records():
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        except OSError as exc:
            if not stop_crawl(self.crawler, exc, self.path):
                logger.error("Cannot write %s: %s", self.path, exc)
            return
        self._written = version

    def crawl_state_opened(self, records: RecordStore) -> None:
        self.ledger.open(records)
        if self.anchors is not None:
            self.anchors.open(records)
        self.stored = True
        stats = self.crawler.stats
        if stats is None or not stats.get_value(STATS_STATE_RESUMED):
            # a new crawl (or an update crawl after a finished one)
            self.ledger.clear()
            if self.anchors is not None:
                self.anchors.clear()
        elif self.ledger.broken_count:
            logger.info(
                "Resuming with %d broken links already found", self.ledger.broken_count
            )

    def crawl_state_committing(self, records: RecordStore) -> None:
        # the links held in memory go into the commit of their pages
        version = self.ledger.version
        self.ledger.flush()
        if self.ledger.version != version:
            self._update_stats()  # e.g. a redirect hop now linked

    def spider_opened(self) -> None:
        self._update_stats()
        self.flush(force=True)  # no stale file from an earlier crawl
        if self.interval > 0:
            self._task = create_looping_call(self.flush)
            self._task.start(self.interval, now=False)

    def _stop_task(self) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()

    def _finish(self) -> None:
        self._stop_task()
        self.ledger.flush()
        self._update_stats()
        self.flush(force=True)

    def crawl_state_closing(self, reason: str, records: RecordStore) -> None:
        # the last rewrite, while the ledger can still be read (Scrapy
        # closes the scheduler, and so the state, before spider_closed)
        self._finish()

    def spider_closed(self) -> None:
        if crawl_stop(self.crawler) is not None:
            self._stop_task()
            return  # the crawl stopped; its state is closed, not finished
        if not self.stored:
            self._finish()  # no crawl state: the ledger is in memory
        count = self.ledger.broken_count + self.missing_anchors
        if count:
            logger.warning(
                "%d broken links (%d internal), listed in %s",
                count,
                self.ledger.broken_internal + self.missing_anchors,
                self.path,
            )
