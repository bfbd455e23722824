"""Downloads that timed out because the crawl's process did not run, fetched again.

A crawl stopped and continued — Ctrl-Z then ``fg``, ``kill -STOP`` and
``kill -CONT``, a debugger's pause, a frozen container, a machine starved
for seconds — finds, when it runs again, every download in flight past its
DOWNLOAD_TIMEOUT: the clock ran while nothing read the sockets, and the
timers fire before the answers waiting in them are read. webspider does
not retry a timeout (settings.py, RETRY_EXCEPTIONS: a server that sent
nothing for a minute seldom answers the next), so those pages were
reported as broken links ("timeout") and never fetched: 2 of 10,011 pages
after one 65 s SIGSTOP, 7 of 1,000,011 in a million-page crawl paused once
(2026-12-04, bench/README.md "Scale").

``StoppedTimeoutMiddleware`` tells the two apart the way the page worker's
client does (webspider.pageworker.client): a timer due every
``TICK_SECONDS`` that runs ``LATE_SECONDS`` late says the process did not
run. A download that times out while that is so — the tick not run yet, or
run late less than ``LATE_SECONDS`` ago (the timers that fell due during
the stop all fire as soon as the process runs again) — was cut by the
stop, not by its server: it is fetched again (a copy, ``dont_filter``, not
counted in RETRY_TIMES: the server did not fail; stats
``webspider/downloads/stopped_retry_count``). Any other timeout stays what
it was. The cost is a timer a second; nothing a request.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import DownloadTimeoutError
from scrapy.utils.asyncio import CallLaterResult, call_later

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

#: how often the timer is due
TICK_SECONDS = 1.0
#: how late the timer may run before its lateness says the process did not
#: run, and how long after such a lateness a timeout is still its doing
LATE_SECONDS = 1.0
STATS_RETRIED = "webspider/downloads/stopped_retry_count"


class StoppedTimeoutMiddleware:
    """Fetches again a download whose timeout fired because the crawl's
    process was stopped (see the module)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._due = 0.0
        #: when the timer last ran late (time.monotonic)
        self._late_at = float("-inf")
        self._timer: CallLaterResult | None = None
        crawler.signals.connect(self._start, signal=signals.engine_started)
        crawler.signals.connect(self._stop, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _start(self) -> None:
        self._schedule()

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        self._due = time.monotonic() + TICK_SECONDS
        self._timer = call_later(TICK_SECONDS, self._tick)

    def _tick(self) -> None:
        now = time.monotonic()
        if now - self._due >= LATE_SECONDS:
            self._late_at = now
        self._schedule()

    def stopped(self) -> bool:
        """Whether the process did not run just now: the timer is overdue,
        or ran late less than LATE_SECONDS ago."""
        if self._timer is None:
            return False
        now = time.monotonic()
        return now - self._due >= LATE_SECONDS or now - self._late_at < LATE_SECONDS

    def process_exception(
        self, request: Request, exception: Exception
    ) -> Request | None:
        if not isinstance(exception, DownloadTimeoutError) or not self.stopped():
            return None
        again = request.copy()
        again.dont_filter = True
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(STATS_RETRIED)
        return again
