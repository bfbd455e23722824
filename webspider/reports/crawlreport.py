"""The end-of-crawl summary: in the log, ``summary.json`` and ``report.html``.

Both files are written when the crawl closes for any reason (finished, Ctrl-C,
a close-spider limit) and, so that a crawl that is killed still leaves them,
every WEBSPIDER_REPORT_INTERVAL seconds during the crawl (with
``finish_reason: null``); each write replaces the file in one step.

The figures come from the stats (documented in docs/reports.md), the seen-set
(distinct URLs), the BrokenLinks and DuplicateContent ledgers, and the items
(pages, pages per depth and round, largest files). Nothing is loaded whole:
report.html lists the MAX_ROWS most linked broken links (internal first) and
the first MAX_ROWS duplicates in URL order, with the totals.

For the whole crawl, a resumed one included: kept in the crawl state as
records (``reports.totals``: pages per depth and round, the largest files,
and the counters of the stats listed in CARRIED_STATS as they were at the
last commit, added back to the stats when a crawl resumes). A page is
counted once however often a kill makes the crawl fetch it: on the
embedded state, what the report keeps of a page waits for its lease's
acknowledgement (webspider.signals.requests_acknowledged) and is counted
on the next commit, in the transaction of that acknowledgement — a page
whose acknowledgement a kill lost is fetched again and counted then, and
only then; on a shared state (Redis), whose workers' writes are applied as
they come, a row a page (``reports.pages``, keyed by its code — the
crawl's shared URL codes, webspider.utils.urlcodes.UrlCodes) tells a page
counted already. What the requests still in progress at a commit counted
(their responses' statuses, their pages' links) is left out of the counters
committed: their leases are not acknowledged by that commit, so after a kill
they are fetched, and counted, again — and only then. So a killed and
resumed crawl's figures about the site (``links``, ``status_codes``…) are an
uninterrupted crawl's; ``requests`` and ``bytes`` count the work done, the
pages fetched again included. A new crawl on a state whose crawl finished
starts from zero.

Settings: WEBSPIDER_REPORT_ENABLED, WEBSPIDER_REPORT_INTERVAL,
WEBSPIDER_REPORT_LARGEST.
"""

from __future__ import annotations

import heapq
import json
import logging
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from webspider import signals, skips
from webspider.config import get_output_dir
from webspider.frontier.schedulerlookup import round_scheduler
from webspider.internals import requests_in_progress
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
    STATS_STATE_RESUMED,
    STATS_URLS_SEEN,
    SUMMARY_FILE,
)
from webspider.records import MemoryRecordStore
from webspider.reports.brokenlinks import BrokenLinks
from webspider.reports.duplicates import DuplicateContent
from webspider.reports.fingerprint import EXACT, NORMALIZED
from webspider.reports.html import MAX_REFERRERS_SHOWN, MAX_ROWS, Report, render
from webspider.reports.options import ReportOptions
from webspider.reports.summary import Summary
from webspider.storage import crawl_stop, stop_crawl
from webspider.utils.atomic import write_atomic
from webspider.utils.urlcodes import UrlCodes

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response
    from typing_extensions import Self

    from webspider.page.links import ParsedPage
    from webspider.records import RecordStore

logger = logging.getLogger(__name__)


_STATUS_PREFIX = "downloader/response_status_count/"
#: what CrawlReport keeps of a page until the commit: its URL, depth, round,
#: size and media type
_Held = tuple[str, int, int, int, "str | None"]

NS_PAGES = "reports.pages"
NS_TOTALS = "reports.totals"

#: counters of the stats a resumed crawl continues from the earlier runs
#: (prefixes); other stats are set from the crawl state, or are of this run
CARRIED_STATS = (
    "downloader/request_count",
    "downloader/request_method_count/",
    "downloader/response_count",
    "downloader/response_bytes",
    "downloader/response_status_count/",
    "downloader/exception_count",
    "downloader/exception_type_count/",
    "response_received_count",
    "item_scraped_count",
    "item_dropped_count",
    STATS_PAGES,
    STATS_LINKS_EXTRACTED,
    STATS_PAGES_LINKS_CAPPED,
    STATS_PAGES_PARSE_BUDGET,
    STATS_BODY_MEMORY_WAITED,
    skips.STATS_PREFIX,
    "webspider/broken/status_count/",
    "webspider/broken/error_count/",
)


#: the counters a request in progress adds to, tracked per request (see
#: CrawlReport.in_progress_counts)
_RESPONSE_COUNT = "downloader/response_count"
_RECEIVED_COUNT = "response_received_count"


#: skips recorded when a crawl ends or pauses, for what it left undone (the
#: URLs still deferred: webspider.frontier.deferredleft): not carried, the run
#: that ends the crawl records them again, those it fetched left out
_END_SKIPS = f"{skips.STATS_PREFIX}/{skips.DEPTH}"


def carried(stats: dict[str, Any]) -> dict[str, int]:
    """The counters of ``stats`` a resumed crawl continues."""
    kept = {
        key: value
        for key, value in stats.items()
        if isinstance(value, int) and key.startswith(CARRIED_STATS)
    }
    at_end = kept.pop(_END_SKIPS, 0)
    if at_end and skips.STATS_PREFIX in kept:
        kept[skips.STATS_PREFIX] -= at_end
        if kept[skips.STATS_PREFIX] <= 0:
            del kept[skips.STATS_PREFIX]
    return kept


def deferred_waiting(crawler: Crawler) -> int:
    """URLs waiting in the deferred frontier for a later round (0 without
    depth rounds, or before the engine opens)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # not set before the crawl starts (Scrapy 2.19)
        return 0
    counted = getattr(getattr(engine, "scheduler", None), "deferred_count", None)
    return int(counted()) if callable(counted) else 0


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
        #: min-heap of (size, url, content type): the largest files so far
        self.largest: list[tuple[int, str, str | None]] = []
        self.started_at = _now()
        self._started = time.monotonic()
        self._task: Any = None
        #: the report's tables, taken from the crawl state before it closed
        self._final: Report | None = None
        #: what requests not done yet added to the carried counters
        self._counted: dict[Request, dict[str, int]] = {}
        self.open(MemoryRecordStore())
        connect = crawler.signals.connect
        connect(self.item_seen, signal=scrapy_signals.item_scraped)
        connect(self.item_seen, signal=scrapy_signals.item_dropped)
        connect(self.crawl_state_opened, signal=signals.crawl_state_opened)
        connect(self.crawl_state_committing, signal=signals.crawl_state_committing)
        connect(self.crawl_state_closing, signal=signals.crawl_state_closing)
        connect(self.spider_opened, signal=scrapy_signals.spider_opened)
        connect(self.spider_closed, signal=scrapy_signals.spider_closed)
        connect(self.response_received, signal=scrapy_signals.response_received)
        connect(self.links_extracted, signal=signals.links_extracted)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- the crawl state --------------------------------------------------------------
    def open(self, store: RecordStore) -> None:
        self._pages = store.records(NS_PAGES)
        self._codes = UrlCodes.of(store)
        self._totals = store.records(NS_TOTALS)
        # A shared crawl's workers each carry their own counters: a worker
        # joining the crawl (which counts as resumed) must not take another
        # worker's as its own, or every worker's summary.json counts the
        # first one's requests and links again. A worker started again in a
        # dead one's folder goes on with its counters (the same name).
        worker = (
            getattr(store, "worker", None) if getattr(store, "shared", False) else None
        )
        self._own = "" if worker is None else f"@{worker}"
        #: distinct pages, the whole crawl
        self.pages = int(self._totals.get("pages") or 0)
        #: pages seen since the last commit, not written yet (_write_held):
        #: what the report keeps of each, not the item, which keeps its
        #: response (and body) alive (webspider.page.response) until then
        self._held: list[_Held] = []
        #: hold them until the commit (a crawl state): written with the
        #: acknowledgements of their pages, in two calls for all (one
        #: round trip each on Redis, where four a page cost a third of a
        #: worker's round trips); without a crawl state, at once
        self._hold = False
        #: the embedded state's pages waiting for their lease's
        #: acknowledgement: ticket → what is kept of its pages (see the
        #: module docstring); None: a shared state's, every page goes to
        #: ``_held`` at once
        self._by_ticket: dict[int, list[_Held]] | None = None
        self._unacked = 0
        #: pages whose acknowledgement the next commit holds: counted with
        #: no row of ``reports.pages``
        self._acked: list[_Held] = []

    def crawl_state_opened(self, records: RecordStore) -> None:
        self.open(records)
        # The counts stay exact across a kill. On the embedded state a page
        # is counted on the first crawl_state_committing after its lease's
        # acknowledgement: both in one transaction. A shared state applies
        # each write as it comes, and its acknowledgements are sent after
        # crawl_state_committing: a worker killed before has its pages
        # fetched again and counted then, one killed between leaves them
        # counted, and put_new (a row a page) does not count them twice.
        self._hold = True
        if not getattr(records, "shared", False):
            self._by_ticket = {}
            self._unacked = 0
            self.crawler.signals.connect(
                self.requests_acknowledged, signal=signals.requests_acknowledged
            )
        stats = self.crawler.stats
        if stats is None or not stats.get_value(STATS_STATE_RESUMED):
            self._pages.clear()
            self._totals.clear()
            self.pages = 0
            return
        # (filtered again: an earlier version, of the same state format,
        # kept its deferrals there as skips)
        kept = carried(self._totals.get("stats" + self._own) or {})
        for key, value in kept.items():
            stats.inc_value(key, int(value))
        largest = self._totals.get("largest" + self._own) or ()
        self.largest = [tuple(entry) for entry in largest]
        heapq.heapify(self.largest)

    def crawl_state_committing(self, records: RecordStore) -> None:
        self._save()

    def _write_held(self) -> None:
        """Write the pages held since the last commit, and add them to the
        counts once for all (a write a key, not three a page)."""
        held, acked = self._held, self._acked
        if not held and not acked:
            return
        self._held = []
        self._acked = []
        counts: dict[str, int] = {}
        # a page without a lease (kept in memory), or any on a shared state:
        # its row tells whether it was counted already
        new = [True] * len(acked)
        if held:
            code_of = self._codes.give([page[0] for page in held])
            new += self._pages.put_new_many([(code_of[page[0]], 1) for page in held])
        for (url, depth, round_, size, content_type), fresh in zip(
            acked + held, new, strict=True
        ):
            if fresh:  # not fetched again after a kill
                for key in ("pages", f"depth/{depth}", f"round/{round_}"):
                    counts[key] = counts.get(key, 0) + 1
                self._largest(size, url, content_type)
        if counts:
            self.pages = self._totals.incr_many(counts)["pages"] + self._unacked
        else:  # all fetched again after a kill: counted already
            self.pages -= len(held)

    def requests_acknowledged(self, tickets: list[int]) -> None:
        """The pages of these leases are done: counted on the next commit,
        with their acknowledgements."""
        by_ticket = self._by_ticket
        if not by_ticket:
            return
        for ticket in tickets:
            pages = by_ticket.pop(ticket, None)
            if pages is not None:
                self._acked += pages
                self._unacked -= len(pages)

    def _save(self) -> None:
        self._write_held()
        stats = self.crawler.stats
        if stats is not None:
            counters = carried(stats.get_stats())
            for key, count in self.in_progress_counts().items():
                left = counters.get(key, 0) - count
                if left > 0:
                    counters[key] = left
                else:
                    counters.pop(key, None)
            self._totals.put("stats" + self._own, counters)
        self._totals.put("largest" + self._own, self.largest)

    # -- what the requests in progress counted ---------------------------------------
    def _count(self, request: Request, key: str, count: int = 1) -> None:
        counted = self._counted.get(request)
        if counted is None:
            counted = self._counted[request] = {}
        counted[key] = counted.get(key, 0) + count

    def response_counted(self, request: Request, status: int) -> None:
        """Scrapy's DownloaderStats is about to count ``request``'s response
        (told by webspider.reports.inprogress, in the same reactor turn)."""
        self._count(request, f"{_STATUS_PREFIX}{status}")
        self._count(request, _RESPONSE_COUNT)

    def response_received(self, response: Response, request: Request) -> None:
        self._count(request, _RECEIVED_COUNT)

    def links_extracted(self, response: Response, page: ParsedPage) -> None:
        if response.request is not None:
            self._count(response.request, STATS_LINKS_EXTRACTED, len(page.links))

    def in_progress_counts(self) -> dict[str, int]:
        """What the requests still in progress added to the carried counters
        (the requests done since the last call are forgotten)."""
        try:
            engine = self.crawler.engine
        except RuntimeError:  # not set before the crawl starts (Scrapy 2.19)
            engine = None
        in_progress = requests_in_progress(engine)
        counted = self._counted
        for request in [r for r in counted if r not in in_progress]:
            del counted[request]
        total: dict[str, int] = {}
        for counts in counted.values():
            for key, count in counts.items():
                total[key] = total.get(key, 0) + count
        return total

    def crawl_state_closing(self, reason: str, records: RecordStore) -> None:
        self._save()
        # pages whose lease is not acknowledged now are released with it:
        # fetched, and counted, by the run that resumes the crawl
        self.pages -= self._unacked
        self._unacked = 0
        if self._by_ticket:
            self._by_ticket.clear()
        # Scrapy closes the state before spider_closed: take the tables
        # that come from it now (bounded: MAX_ROWS rows of each)
        self._final = self.report(self.summary(reason))
        # and write the files now, before the state's last commit (which
        # marks a crawl finished): a kill between that commit and
        # spider_closed left the last interval's files of a crawl the next
        # run takes as finished. spider_closed writes them again, with
        # Scrapy's last figures.
        self.write(reason)

    def item_seen(self, item: Any, response: Response | None = None) -> None:
        if not isinstance(item, PageItem):
            return
        if self._hold:
            # written with the page's acknowledgement (crawl_state_committing)
            page = (item.url, item.depth, item.round, item.size, item.content_type)
            self.pages += 1  # for the progress line; exact once written
            by_ticket = self._by_ticket
            if by_ticket is not None and response is not None:
                ticket = self._ticket(response)
                if ticket is not None:
                    by_ticket.setdefault(ticket, []).append(page)
                    self._unacked += 1
                    return
            self._held.append(page)
            return
        code = self._codes.give([item.url])[item.url]
        if not self._pages.put_new(code, 1):
            return  # the same page, fetched again after a kill
        totals = self._totals
        self.pages = totals.incr("pages")
        totals.incr(f"depth/{item.depth}")
        totals.incr(f"round/{item.round}")
        self._largest(item.size, item.url, item.content_type)

    def _ticket(self, response: Response) -> int | None:
        """The lease ``response``'s page waits under (None: none, or no
        StateScheduler runs the crawl)."""
        try:
            scheduler = round_scheduler(self.crawler)
        except RuntimeError:  # no engine: not in a crawl (Scrapy 2.19)
            return None
        return None if scheduler is None else scheduler.lease_ticket(response.request)

    def _largest(self, size: int, url: str, content_type: str | None) -> None:
        if self.keep_largest:
            entry = (size, url, content_type)
            if len(self.largest) < self.keep_largest:
                heapq.heappush(self.largest, entry)
            elif entry > self.largest[0]:
                heapq.heapreplace(self.largest, entry)

    def _counts(self, prefix: str) -> dict[int, int]:
        cut = len(prefix)
        return {int(key[cut:]): int(n) for key, n in self._totals.items(prefix)}

    # -- figures --------------------------------------------------------------------
    def summary(self, reason: str | None) -> Summary:
        if self._final is None:
            self._write_held()
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
            # distinct pages (a page fetched again after a kill counts once)
            pages=self.pages,
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
        final = self._final
        if final is not None:  # the crawl state closed: its tables as they were
            final.summary = summary
            return final
        self._write_held()
        broken = self._broken_links()
        duplicates = self.crawler.get_extension(DuplicateContent)
        return Report(
            summary=summary,
            pages_by_depth=self._counts("depth/"),
            pages_by_round=self._counts("round/"),
            # streamed: only the rows shown are held
            broken=heapq.nlargest(
                MAX_ROWS,
                broken.records(MAX_REFERRERS_SHOWN) if broken is not None else (),
                key=lambda r: (bool(r.get("internal")), int(r["referrer_count"])),
            ),
            duplicates=list(duplicates.found(MAX_ROWS)) if duplicates else [],
            largest=sorted(self.largest, reverse=True),
        )

    def _broken_links(self) -> BrokenLinks | None:
        return self.crawler.get_extension(BrokenLinks)

    # -- files ----------------------------------------------------------------------
    def write(self, reason: str | None = None, *, last: bool = False) -> Summary | None:
        """Write summary.json and report.html; the summary, or None when a
        write the disk refused stopped the crawl (webspider.storage): the
        files are left as they were, and the crawl state may be closed.
        Such a write stops the crawl, unless it is the ``last`` one (when
        Scrapy closes the spider: the crawl state is closed, the crawl
        finished or not already, and the files its close wrote stay)."""
        if crawl_stop(self.crawler) is not None:
            return None
        summary = self.summary(reason)
        report = self.report(summary)
        path = self.output / SUMMARY_FILE
        try:
            write_atomic(
                path,
                json.dumps(summary.as_dict(), indent=2, ensure_ascii=False) + "\n",
            )
            path = self.output / REPORT_FILE
            write_atomic(path, render(report))
        except OSError as exc:
            if last or not stop_crawl(self.crawler, exc, path):
                logger.error(
                    "Cannot write the crawl report in %s: %s", self.output, exc
                )
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
        summary = self.write(reason, last=True)
        self._final = None
        for line in summary.log_lines() if summary is not None else ():
            logger.info("%s", line)
