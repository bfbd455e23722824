"""The end-of-crawl summary: in the log, ``summary.json`` and ``report.html``.

Both files are written when the crawl closes for any reason (finished, Ctrl-C,
a close-spider limit) and, so that a crawl that is killed still leaves them,
every WEBSPIDER_REPORT_INTERVAL seconds during the crawl (with
``finish_reason: null``); each write replaces the file in one step.

The figures come from the stats (documented in docs/reports.md), the seen-set
(distinct URLs), the BrokenLinks and DuplicateContent extensions, and the
items (pages per depth and round, largest files).

Settings: WEBSPIDER_REPORT_ENABLED, WEBSPIDER_REPORT_INTERVAL,
WEBSPIDER_REPORT_LARGEST.
"""

from __future__ import annotations

import heapq
import json
import logging
import time
from collections import Counter
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from webspider import skips
from webspider.config import get_output_dir
from webspider.items import PageItem
from webspider.keys import (
    BROKEN_LINKS_FILE,
    PAGES_FILE,
    REPORT_FILE,
    SKIPPED_FILE,
    STATS_BODY_MEMORY_MAX,
    STATS_BODY_MEMORY_WAITED,
    STATS_DEFERRED_LEFT,
    STATS_DUPLICATES,
    STATS_LINKS_EXTRACTED,
    STATS_PAGES,
    STATS_PAGES_LINKS_CAPPED,
    STATS_PAGES_PARSE_BUDGET,
    STATS_ROUNDS,
    STATS_URLS_SEEN,
    SUMMARY_FILE,
)
from webspider.reports.brokenlinks import BrokenLinks
from webspider.reports.duplicates import DuplicateContent
from webspider.reports.fingerprint import EXACT, NORMALIZED
from webspider.reports.html import Report, render
from webspider.reports.options import ReportOptions
from webspider.reports.summary import Summary
from webspider.utils.atomic import write_atomic

if TYPE_CHECKING:
    from typing_extensions import Self

logger = logging.getLogger(__name__)


_STATUS_PREFIX = "downloader/response_status_count/"


def deferred_waiting(crawler: Crawler) -> int:
    """URLs waiting in the deferred frontier for a later round (0 without
    depth rounds)."""
    engine = crawler.engine
    frontier = getattr(getattr(engine, "scheduler", None), "frontier", None)
    return len(frontier) if frontier is not None else 0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class CrawlReport:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        self.options = options = ReportOptions.of(settings)
        if not options.report:
            raise NotConfigured
        self.output = get_output_dir(settings)
        self.interval = options.report_interval
        self.keep_largest = options.report_largest
        self.by_depth: Counter[int] = Counter()
        self.by_round: Counter[int] = Counter()
        #: min-heap of (size, url, content type): the largest files so far
        self.largest: list[tuple[int, str, str | None]] = []
        self.started_at = _now()
        self._started = time.monotonic()
        self._task: Any = None
        connect = crawler.signals.connect
        connect(self.item_seen, signal=scrapy_signals.item_scraped)
        connect(self.item_seen, signal=scrapy_signals.item_dropped)
        connect(self.spider_opened, signal=scrapy_signals.spider_opened)
        connect(self.spider_closed, signal=scrapy_signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def item_seen(self, item: Any) -> None:
        if not isinstance(item, PageItem):
            return
        self.by_depth[item.depth] += 1
        self.by_round[item.round] += 1
        if self.keep_largest:
            entry = (item.size, item.url, item.content_type)
            if len(self.largest) < self.keep_largest:
                heapq.heappush(self.largest, entry)
            elif entry > self.largest[0]:
                heapq.heapreplace(self.largest, entry)

    # -- figures --------------------------------------------------------------------
    def summary(self, reason: str | None) -> Summary:
        stats: dict[str, Any] = (
            self.crawler.stats.get_stats() if self.crawler.stats is not None else {}
        )
        prefix = skips.STATS_PREFIX + "/"
        broken = self._broken_links()
        return Summary(
            start_urls=self.start_urls(),
            started_at=self.started_at,
            finished_at=_now(),
            finish_reason=reason,
            elapsed_seconds=time.monotonic() - self._started,
            pages=int(stats.get(STATS_PAGES, 0)),
            # the scheduler's count of GET keys (HEAD checks are keyed apart)
            urls_seen=int(stats.get(STATS_URLS_SEEN, 0)),
            links=int(stats.get(STATS_LINKS_EXTRACTED, 0)),
            requests=int(stats.get("downloader/request_count", 0)),
            bytes=int(stats.get("downloader/response_bytes", 0)),
            broken_internal=(
                broken.ledger.broken_internal + broken.missing_anchors if broken else 0
            ),
            broken_external=broken.ledger.broken_external if broken else 0,
            missing_anchors=broken.missing_anchors if broken else 0,
            duplicates_exact=int(stats.get(f"{STATS_DUPLICATES}/{EXACT}", 0)),
            duplicates_normalized=int(stats.get(f"{STATS_DUPLICATES}/{NORMALIZED}", 0)),
            skipped={
                key[len(prefix) :]: int(value)
                for key, value in stats.items()
                if key.startswith(prefix)
            },
            rounds=int(stats.get(STATS_ROUNDS, 0)),
            # set when the scheduler closes; while the crawl runs, the frontier
            deferred_remaining=int(
                stats.get(STATS_DEFERRED_LEFT, deferred_waiting(self.crawler))
            ),
            status_codes={
                int(key[len(_STATUS_PREFIX) :]): int(value)
                for key, value in stats.items()
                if key.startswith(_STATUS_PREFIX)
                and key[len(_STATUS_PREFIX) :].isdigit()
            },
            outputs=self.outputs(broken is not None),
            links_capped_pages=int(stats.get(STATS_PAGES_LINKS_CAPPED, 0)),
            parse_budget_pages=int(stats.get(STATS_PAGES_PARSE_BUDGET, 0)),
            body_memory_waits=int(stats.get(STATS_BODY_MEMORY_WAITED, 0)),
            body_memory_max_bytes=int(stats.get(STATS_BODY_MEMORY_MAX, 0)),
        )

    def start_urls(self) -> list[str]:
        """As given, passwords masked (``user:***@``)."""
        config = getattr(self.crawler.spider, "config", None)
        return list(getattr(config, "shown_start_urls", ()))

    def outputs(self, broken_links: bool) -> dict[str, str]:
        files: dict[str, str] = {}
        feeds = self.crawler.settings.getdict("FEEDS")
        # the scheduler writes pages.jsonl unless FEEDS is set
        files["pages"] = (
            str(next(iter(feeds))) if feeds else str(self.output / PAGES_FILE)
        )
        if broken_links:
            files["broken_links"] = str(self.output / BROKEN_LINKS_FILE)
        if self.options.log_skipped:
            files["skipped"] = str(self.output / SKIPPED_FILE)
        files["summary"] = str(self.output / SUMMARY_FILE)
        files["report"] = str(self.output / REPORT_FILE)
        return files

    def report(self, summary: Summary) -> Report:
        broken = self._broken_links()
        duplicates = self.crawler.get_extension(DuplicateContent)
        return Report(
            summary=summary,
            pages_by_depth=dict(self.by_depth),
            pages_by_round=dict(self.by_round),
            broken=broken.records() if broken is not None else [],
            duplicates=list(duplicates.found) if duplicates is not None else [],
            largest=sorted(self.largest, reverse=True),
        )

    def _broken_links(self) -> BrokenLinks | None:
        return self.crawler.get_extension(BrokenLinks)

    # -- files ----------------------------------------------------------------------
    def write(self, reason: str | None = None) -> Summary:
        summary = self.summary(reason)
        try:
            write_atomic(
                self.output / SUMMARY_FILE,
                json.dumps(summary.as_dict(), indent=2, ensure_ascii=False) + "\n",
            )
            write_atomic(self.output / REPORT_FILE, render(self.report(summary)))
        except OSError as exc:
            logger.error("Cannot write the crawl report in %s: %s", self.output, exc)
        return summary

    def spider_opened(self) -> None:
        self._started = time.monotonic()
        self.started_at = _now()
        if self.interval > 0:
            self._task = create_looping_call(self.write)
            self._task.start(self.interval, now=False)

    def spider_closed(self, reason: str) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        summary = self.write(reason)
        for line in summary.log_lines():
            logger.info("%s", line)
