"""The crawl cannot go on: it stops, in one line, never marked finished.

Two kinds of trouble stop a crawl this way, wherever the crawl meets them
(its scheduler, the features' records and ledgers, the mirror, a signal
handler), and each has its close reason, its line and its exit status:

- **A write the disk refuses** (``write_failed``, exit status 4): a full
  disk (ENOSPC), a quota (EDQUOT), a file-size limit (EFBIG: ``ulimit -f``,
  which Python answers with an error rather than the signal), a read-only
  file system (EROFS) or a failing disk (EIO), met by any of the crawl's
  writes — the crawl state's SQLite (``database or disk is full``, ``disk
  I/O error``), ``pages.jsonl``, the mirror's files (in the page worker
  too), the reports, ``deferred.jsonl``, the log file — or by a Redis
  crawl state's server (``StateWriteRefused``: out of memory, a read-only
  replica…). It is not a page's fault, and no later write would fare
  better. Once there is room, the same command continues the crawl.
- **A damaged crawl state** (``state_damaged``, exit status 5): the state
  that the checks made when it opened took for sound turns out not to be —
  its file overwritten or cut while the crawl runs (SQLite's ``database
  disk image is malformed``, ``file is not a database``, a short read), or
  a row the state's own layout promises missing (a ``StateError``, such as
  a waiting link naming a text that is not there), or a Redis state whose
  keys are gone. What the crawl would write from it could be wrong, and
  the same command cannot continue it: the line says to start over with
  ``-a restart=1`` or to restore the file, and the scheduler leaves a mark
  beside the file so that the next run is refused before it starts
  (webspider.frontier.resume), as it would be for a state found damaged
  when it opens.

The one that meets it calls ``stop_crawl``:

- the first stop is recorded for the crawl (``crawl_stop``) and logged
  once, as one ERROR line without a traceback; later errors (the pages in
  flight meet the same full disk or the same damaged file) only count in
  ``webspider/storage/failed_write_count`` or
  ``webspider/storage/damaged_state_error_count``;
- the engine is asked to close with the stop's reason (``CLOSE_REASON``,
  ``DAMAGED_REASON``), which no feature takes for the crawl's end;
- from then on nothing is committed: the crawl state's scheduler rolls its
  transaction back and closes the state as a kill would leave it (never
  marked finished, the pages not acknowledged fetched again), and the
  features' end-of-crawl writes are not made (``crawl_stop`` tells them);
- ``scrapy crawl`` prints the stop's line (``CrawlStop.line``) after
  ``webspider: `` and exits with its status.

Signal handlers need not call it: webspider's SignalManager
(webspider.signals) hands such an error raised by a handler to
``stop_crawl`` instead of logging its traceback.

Any other error is not this module's: ``stop_crawl`` returns False and the
caller raises it as before.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import sqlite3
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro

from webspider.exceptions import CrawlStateError, StateWriteRefused
from webspider.internals import engine_closing

if TYPE_CHECKING:
    from collections.abc import Callable
    from os import PathLike

    from scrapy.core.engine import ExecutionEngine

logger = logging.getLogger(__name__)

#: the close reason (``finish_reason``) of a crawl a failed write stopped
CLOSE_REASON = "write_failed"
#: the close reason of a crawl a damaged crawl state stopped
DAMAGED_REASON = "state_damaged"
#: writes that failed this way, the first one included
STATS_FAILED_WRITES = "webspider/storage/failed_write_count"
#: errors of a damaged crawl state, the first one included
STATS_DAMAGED = "webspider/storage/damaged_state_error_count"
#: errors of the crawl state met after the stop, not logged (``_Guard``)
STATS_AFTER_STOP = "webspider/storage/after_stop_error_count"

#: what to do about a damaged crawl state (the stop's line, and the refusal
#: of the next run: webspider.frontier.state.damaged_refusal)
DAMAGED_ADVICE = "start over with -a restart=1, or restore the file from a copy"

#: what to do, by the errno of a write that failed
ADVICE = {
    errno.ENOSPC: "free space",
    errno.EDQUOT: "free space (or raise the quota)",
    errno.EFBIG: "raise the file-size limit (ulimit -f)",
    errno.EROFS: "make the file system writable",
    errno.EIO: "check the disk",
}

#: SQLite's primary result codes for the same (an extended code's low byte):
#: SQLITE_FULL (ENOSPC) and SQLITE_IOERR (any other failed write or fsync,
#: EFBIG and EIO among them)
_SQLITE_FULL = 13
_SQLITE_IOERR = 10
_SQLITE_ADVICE = {
    _SQLITE_FULL: "free space",
    _SQLITE_IOERR: "free space or check the disk",
}
#: SQLITE_IOERR_READ, SQLITE_IOERR_SHORT_READ: a read (a truncated file,
#: not a write the disk refused): a damaged state
_SQLITE_READS = frozenset({10 | 1 << 8, 10 | 2 << 8})
#: SQLITE_CORRUPT (with its extended codes) and SQLITE_NOTADB: the file is
#: not what SQLite wrote
_SQLITE_DAMAGED = frozenset({11, 26})
#: SQLite does not say which errno it met: a file-size limit in force may be it
_SQLITE_LIMITED = {
    _SQLITE_FULL: "free space or raise the file-size limit (ulimit -f)",
    _SQLITE_IOERR: (
        "free space, raise the file-size limit (ulimit -f) or check the disk"
    ),
}


@dataclass(frozen=True)
class CrawlStop:
    """What stopped a crawl: a write the disk refused, or (``damaged``) a
    damaged crawl state."""

    #: the file (the crawl state's, for a damaged one), when known
    path: str | None
    #: the error, e.g. "No space left on device"
    error: str
    #: what to do (before the same command continues the crawl, for a write)
    advice: str
    #: a damaged crawl state, not a write
    damaged: bool = False

    @property
    def reason(self) -> str:
        """The crawl's close reason."""
        return DAMAGED_REASON if self.damaged else CLOSE_REASON

    def line(self) -> str:
        if self.damaged:
            where = "damaged crawl state" + (f" {self.path}" if self.path else "")
            return (
                f"{where}: {self.error}; the crawl is not finished and cannot be "
                f"continued: {self.advice}"
            )
        where = f"cannot write {self.path}" if self.path else "a write failed"
        return (
            f"{where}: {self.error}; the crawl is not finished: {self.advice} "
            "and run the same command again to continue it"
        )


def advice_for(exc: BaseException) -> str | None:
    """What to do about ``exc`` when it is a write the disk refused (see the
    module docstring), else None."""
    if isinstance(exc, StateWriteRefused):  # a Redis state's
        return exc.advice
    if isinstance(exc, OSError):
        return ADVICE.get(exc.errno) if exc.errno is not None else None
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is None or code in _SQLITE_READS:
            return None
        return (_SQLITE_LIMITED if _size_limited() else _SQLITE_ADVICE).get(code & 0xFF)
    return None


def _size_limited() -> bool:
    """Whether a file-size limit (``ulimit -f``) is in force."""
    try:
        import resource  # noqa: PLC0415 - POSIX only, and asked on a failure only
    except ImportError:
        return False
    return resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY


def failed_write(exc: BaseException) -> bool:
    """Whether ``exc`` is a write the disk refused (``stop_crawl``'s kind)."""
    return advice_for(exc) is not None


def damaged_state(exc: BaseException) -> bool:
    """Whether ``exc`` says the crawl state is damaged (see the module
    docstring): a CrawlStateError, or SQLite's error for a file that is not
    what it wrote (the only SQLite file of a crawl is its state)."""
    if isinstance(exc, CrawlStateError):
        return not isinstance(exc, StateWriteRefused)
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code is not None and (
            (code & 0xFF) in _SQLITE_DAMAGED or code in _SQLITE_READS
        )
    return False


_FAILURES: WeakKeyDictionary[Crawler, CrawlStop] = WeakKeyDictionary()
#: any crawl of this process was stopped: ``crawl_stop`` is asked once a
#: request, where a look-up of the weak dictionary (a new weak reference
#: each time) would cost more than the rest of the check
_ANY: list[bool] = []
#: where each crawl's state is (``state_opened``): the file an SQLite error
#: met anywhere is about, and the one a damaged state's line names
_STATES: WeakKeyDictionary[Crawler, str] = WeakKeyDictionary()


def crawl_stop(crawler: Crawler) -> CrawlStop | None:
    """What stopped this crawl (a write the disk refused, a damaged crawl
    state), or None."""
    return _FAILURES.get(crawler) if _ANY else None


def state_opened(crawler: Crawler, where: str | PathLike[str]) -> None:
    """Tell where the crawl's state is (its file, or its Redis crawl); from
    now on an error of the kinds above that nobody caught stops the crawl
    (``_Guard``)."""
    _STATES[crawler] = str(where)
    _Guard.install(crawler)


def crawl_closed(crawler: Crawler) -> None:
    """The crawl is over (its spider closed): its errors are no longer this
    module's (``_Guard``; a process may run other crawls after it)."""
    guard = _GUARDED.get(crawler)
    if guard is not None:
        guard.active = False


def stop_crawl(
    crawler: object,
    exc: BaseException,
    path: str | PathLike[str] | None = None,
) -> bool:
    """Stop the crawl for ``exc`` if it is a write the disk refused (on
    ``path``, or the file the error names; an SQLite error's is the crawl
    state's) or a damaged crawl state: True. False otherwise (the caller
    raises it)."""
    if not isinstance(crawler, Crawler):
        return False
    advice = advice_for(exc)
    damaged = advice is None and damaged_state(exc)
    if advice is None and not damaged:
        return False
    if crawler.stats is not None:
        crawler.stats.inc_value(STATS_DAMAGED if damaged else STATS_FAILED_WRITES)
    if crawler in _FAILURES:
        return True
    if path is None and (damaged or isinstance(exc, (sqlite3.Error, CrawlStateError))):
        path = _STATES.get(crawler)
    if path is None and isinstance(exc, OSError) and exc.filename is not None:
        path = exc.filename
    if isinstance(exc, OSError) and exc.strerror:
        error = exc.strerror
    else:
        error = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, CrawlStateError) and path is not None:
        # a StateError's message begins with the file it names
        error = error.removeprefix(f"{path}: ")
    stop = CrawlStop(
        str(path) if path is not None else None,
        error,
        DAMAGED_ADVICE if damaged else advice or "",
        damaged=damaged,
    )
    _FAILURES[crawler] = stop
    _ANY.append(True)
    logger.error("Stopping the crawl: %s", stop.line())
    _Guard.install(crawler)
    _close(crawler, stop.reason)
    return True


class _Guard(logging.Filter):
    """Where such an error ends when nobody caught it, and what the stop
    leaves behind; a filter of the root logger's handlers, where every
    logger's records end (Scrapy's log handler is one), from the moment the
    crawl's state opens (``state_opened``) or the crawl stops until its
    spider closes (``crawl_closed``), for the records of its crawl (those
    that name no spider too).

    Before the stop: the state is also read where Scrapy catches the errors
    and logs them with their tracebacks before webspider's code sees them —
    a spider middleware asking the seen-set ("Spider error processing"), a
    callback of the event loop — and the crawl would go on. A record of such
    an error (a write the disk refused, a damaged state) stops the crawl
    instead (``stop_crawl``, on the crawl's thread only), and its traceback
    is not logged.

    After it: the pages in flight when the crawl stopped are processed while
    the engine closes, and write into the crawl state's transaction that
    nothing commits any more — which SQLite may have rolled back when the
    failed write was its COMMIT (a table first made in it is gone: "no such
    table"). Their errors (an SQLite error, a damaged state's, or another
    write the disk refused, raised where Scrapy logs it with its traceback)
    are what the stop left behind, not news: counted in STATS_AFTER_STOP,
    not logged."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__()
        self._crawler = weakref.ref(crawler)
        #: until the crawl is over (``crawl_closed``)
        self.active = True

    @classmethod
    def install(cls, crawler: Crawler) -> None:
        """On the root logger's handlers that lack it (Scrapy replaces its
        handler when the crawl starts)."""
        guard = _GUARDED.get(crawler)
        if guard is None:
            guard = _GUARDED[crawler] = cls(crawler)
        guard.active = True  # a stop after the spider closed (its end writes)
        for handler in logging.getLogger().handlers:
            if guard in handler.filters:
                continue
            handler.addFilter(guard)
            if isinstance(handler, logging.FileHandler):  # LOG_FILE
                handler.handleError = _LogFileError(  # type: ignore[method-assign]
                    crawler, handler, handler.handleError
                )

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        error = info[1] if info else None
        if error is None:
            return True
        crawler = self._crawler()
        if crawler is None or not self.active:  # its crawl is over
            return True
        spider = getattr(record, "spider", None)
        if spider is not None and spider is not crawler.spider:
            return True  # another crawl's (a process of several at once)
        # a record goes through each handler: judged once
        judged = record.__dict__.get(_JUDGED)
        if judged is None:
            judged = self._judge(crawler, error)
            record.__dict__[_JUDGED] = judged
        return judged

    @staticmethod
    def _judge(crawler: Crawler, error: BaseException) -> bool:
        """Whether the record of ``error`` is logged."""
        if crawl_stop(crawler) is None:
            if threading.current_thread() is not threading.main_thread():
                return True
            return not stop_crawl(crawler, error)
        if not isinstance(error, (sqlite3.Error, CrawlStateError)) and not failed_write(
            error
        ):
            return True
        if crawler.stats is not None:
            crawler.stats.inc_value(STATS_AFTER_STOP)
        return False


class _LogFileError:
    """The ``handleError`` of the log file's handler (LOG_FILE): a write
    the disk refused stops the crawl (one line, exit status 4) instead of
    Python's "--- Logging error ---" block with its traceback on stderr for
    each record from then on (its records after the stop, the stop's own
    line among them, fail the same way: only counted). Any other error, or
    one met on another thread, is the handler's as before."""

    def __init__(
        self,
        crawler: Crawler,
        handler: logging.FileHandler,
        original: Callable[[logging.LogRecord], None],
    ) -> None:
        self._crawler = weakref.ref(crawler)
        self._path = handler.baseFilename
        self._original = original

    def __call__(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        crawler = self._crawler()
        if (
            crawler is not None
            and error is not None
            and failed_write(error)
            and threading.current_thread() is threading.main_thread()
            and stop_crawl(crawler, error, self._path)
        ):
            return
        self._original(record)


#: the crawls whose records ``_Guard`` filters
_GUARDED: WeakKeyDictionary[Crawler, _Guard] = WeakKeyDictionary()
#: the record's attribute holding ``_Guard``'s verdict
_JUDGED = "_webspider_guard"


def _close(crawler: Crawler, reason: str) -> None:
    """Ask the engine to close the spider with ``reason`` (it is closing
    already, or not running: nothing to do)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # not set before the crawl starts (Scrapy 2.19)
        return
    if engine is None or engine.spider is None or engine_closing(engine):
        return
    deferred = deferred_from_coro(_close_spider(engine, reason))
    # closed meanwhile (the slot gone): nothing left to close
    deferred.addErrback(lambda _failure: None)


async def _close_spider(engine: ExecutionEngine, reason: str) -> None:
    # the engine may close meanwhile (a stop met by the scheduler as it
    # closes), and the coroutine runs later: its RuntimeError ("Spider not
    # opened") is no news, and must not end as an unretrieved task's
    with contextlib.suppress(RuntimeError):
        await engine.close_spider_async(reason=reason)
