"""Show that a long crawl is alive; replaces Scrapy's LogStats.

On a terminal (stderr is a TTY): one status line, redrawn in place with a
carriage return every WEBSPIDER_PROGRESS_REFRESH seconds and erased when the
crawl ends. A log record written meanwhile first erases the line (a filter
on the log handlers that write to the same terminal), so log lines never get
glued to it; the next refresh draws it again below them.

Otherwise (a log file, scrapyd): one INFO line every
WEBSPIDER_PROGRESS_INTERVAL seconds with the same figures.

Figures: pages fetched (``webspider/pages/fetched_count``), pending (the
scheduler's queue — a resumed crawl's includes what the earlier runs left —
plus requests waiting in a download slot), in flight (requests being
transferred), deferred (URLs waiting in the depth rounds' frontier, 0 without
them), skipped (``webspider/skipped/url_count``), broken
(``webspider/broken/url_count``), pages per second over the last interval
(this run's pages only: a resumed crawl's counts start from the earlier
runs'), and bytes downloaded (``downloader/response_bytes``).

Settings: WEBSPIDER_PROGRESS (auto, terminal, log, off),
WEBSPIDER_PROGRESS_REFRESH, WEBSPIDER_PROGRESS_INTERVAL.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from typing import IO, TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from webspider.internals import slot_transferring
from webspider.keys import STATS_BROKEN, STATS_PAGES
from webspider.reports.crawlreport import deferred_waiting
from webspider.reports.options import ReportOptions
from webspider.reports.progress import Progress, fit, format_line, format_log
from webspider.skips import STATS_PREFIX as STATS_SKIPPED

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)

CLEAR_LINE = "\r\x1b[K"


class _EraseFirst(logging.Filter):
    """Erase the status line before a log record reaches the terminal."""

    def __init__(self, progress: ProgressLine) -> None:
        super().__init__()
        self.progress = progress

    def filter(self, record: logging.LogRecord) -> bool:
        self.progress.erase()
        return True


class ProgressLine:
    def __init__(self, crawler: Crawler, stream: IO[str] | None = None) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = ReportOptions.of(settings)
        mode = options.progress
        if mode == "off":
            raise NotConfigured
        self.stream = stream if stream is not None else sys.stderr
        if mode == "auto":
            mode = "terminal" if _isatty(self.stream) else "log"
        self.terminal = mode == "terminal"
        self.interval = (
            options.progress_refresh if self.terminal else options.progress_interval
        )
        self._shown = False
        self._last: tuple[float, int] = (time.monotonic(), 0)
        self._task: Any = None
        self._filter = _EraseFirst(self)
        self._filtered: list[logging.Handler] = []
        crawler.signals.connect(self.spider_opened, signal=scrapy_signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=scrapy_signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def figures(self) -> Progress:
        stats = self.crawler.stats
        get = stats.get_value if stats is not None else (lambda key, default=0: default)
        pages = int(get(STATS_PAGES, 0))
        now = time.monotonic()
        then, pages_then = self._last
        self._last = (now, pages)
        rate = (pages - pages_then) / (now - then) if now > then else 0.0
        engine = self.crawler.engine
        queued = in_flight = 0
        scheduled = None
        if engine is not None:
            downloader = engine.downloader
            # active = waiting in a download slot (delay, concurrency) + on the wire
            in_flight = sum(
                len(slot_transferring(slot)) for slot in downloader.slots.values()
            )
            queued = max(0, len(downloader.active) - in_flight)
            scheduler = getattr(engine, "scheduler", None)
            if hasattr(scheduler, "__len__"):
                # the whole queue: a resumed crawl's scheduler/enqueued
                # counts only what this run queued
                scheduled = len(scheduler)  # type: ignore[arg-type]
        if scheduled is None:
            enqueued = int(get("scheduler/enqueued", 0))
            scheduled = max(0, enqueued - int(get("scheduler/dequeued", 0)))
        deferred = deferred_waiting(self.crawler)
        return Progress(
            pages=pages,
            pending=queued + scheduled,
            in_flight=in_flight,
            deferred=deferred,
            skipped=int(get(STATS_SKIPPED, 0)),
            broken=int(get(STATS_BROKEN, 0)),
            pages_per_second=rate,
            bytes=int(get("downloader/response_bytes", 0)),
        )

    def tick(self) -> None:
        progress = self.figures()
        if not self.terminal:
            logger.info("%s", format_log(progress))
            return
        width = self._width()
        self._write("\r" + fit(format_line(progress), width) + "\x1b[K")
        self._shown = True

    def _width(self) -> int:
        # The size of the terminal the line goes to (stdout may be a pipe).
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        return columns or shutil.get_terminal_size((100, 24)).columns

    def erase(self) -> None:
        if self._shown:
            self._shown = False
            self._write(CLEAR_LINE)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # the terminal went away; the crawl goes on

    def spider_opened(self) -> None:
        # a resumed crawl's page count starts from the earlier runs' (the
        # report adds them back when the crawl state opens, before this)
        stats = self.crawler.stats
        pages = int(stats.get_value(STATS_PAGES, 0)) if stats is not None else 0
        self._last = (time.monotonic(), pages)
        if self.terminal:
            for handler in logging.getLogger().handlers:
                if getattr(handler, "stream", None) is self.stream:
                    handler.addFilter(self._filter)
                    self._filtered.append(handler)
        self._task = create_looping_call(self.tick)
        self._task.start(self.interval, now=False)

    def spider_closed(self) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        self.erase()
        for handler in self._filtered:
            handler.removeFilter(self._filter)
        self._filtered.clear()


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
