"""A write the crawl cannot make: it stops, resumable, in one line.

A full disk (ENOSPC), a quota (EDQUOT), a file-size limit (EFBIG:
``ulimit -f``, which Python answers with an error rather than the signal), a
read-only file system (EROFS) or a failing disk (EIO), met by any of the
crawl's writes — the crawl state's SQLite (``database or disk is full``,
``disk I/O error``), ``pages.jsonl``, the mirror's files (in the page worker
too), the reports, ``deferred.jsonl`` — is not a page's fault, and no later
write would fare better. So the writer that meets it calls ``stop_crawl``,
the one way to say "the crawl cannot go on":

- the first failure is recorded for the crawl (``write_failure``) and
  logged once, as one ERROR line without a traceback; later ones (the pages
  in flight meet the same full disk) only count in
  ``webspider/storage/failed_write_count``;
- the engine is asked to close with reason ``write_failed``
  (``CLOSE_REASON``), which no feature takes for the crawl's end;
- from then on nothing is committed: the crawl state's scheduler rolls its
  transaction back and closes the state as a kill would leave it (never
  marked finished, the pages not acknowledged fetched again), and the
  features' end-of-crawl writes are not made (``write_failure`` tells them);
- ``scrapy crawl`` prints the failure's line, ``webspider: cannot write
  <file>: <error>; the crawl is not finished: <what to do> and run the same
  command again to continue it``, and exits with status 4.

Signal handlers need not call it: webspider's SignalManager
(webspider.signals) hands such an error raised by a handler to
``stop_crawl`` instead of logging its traceback.

Any other error is not this module's: ``stop_crawl`` returns False and the
caller raises it as before.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro

if TYPE_CHECKING:
    from os import PathLike

logger = logging.getLogger(__name__)

#: the close reason (``finish_reason``) of a crawl a failed write stopped
CLOSE_REASON = "write_failed"
#: writes that failed this way, the first one included
STATS_FAILED_WRITES = "webspider/storage/failed_write_count"
#: errors of the crawl state met after the stop, not logged (``_AfterStop``)
STATS_AFTER_STOP = "webspider/storage/after_stop_error_count"

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
#: not a write the disk refused)
_SQLITE_READS = frozenset({10 | 1 << 8, 10 | 2 << 8})
#: SQLite does not say which errno it met: a file-size limit in force may be it
_SQLITE_LIMITED = {
    _SQLITE_FULL: "free space or raise the file-size limit (ulimit -f)",
    _SQLITE_IOERR: (
        "free space, raise the file-size limit (ulimit -f) or check the disk"
    ),
}


@dataclass(frozen=True)
class WriteFailure:
    """The write that stopped a crawl."""

    #: the file, when known
    path: str | None
    #: the error, e.g. "No space left on device"
    error: str
    #: what to do before the same command continues the crawl
    advice: str

    def line(self) -> str:
        where = f"cannot write {self.path}" if self.path else "a write failed"
        return (
            f"{where}: {self.error}; the crawl is not finished: {self.advice} "
            "and run the same command again to continue it"
        )


def advice_for(exc: BaseException) -> str | None:
    """What to do about ``exc`` when it is a write the disk refused (see the
    module docstring), else None."""
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


_FAILURES: WeakKeyDictionary[Crawler, WriteFailure] = WeakKeyDictionary()
#: any crawl of this process was stopped: ``write_failure`` is asked once a
#: request, where a look-up of the weak dictionary (a new weak reference
#: each time) would cost more than the rest of the check
_ANY: list[bool] = []


def write_failure(crawler: Crawler) -> WriteFailure | None:
    """The write that stopped this crawl, or None."""
    return _FAILURES.get(crawler) if _ANY else None


def stop_crawl(
    crawler: object,
    exc: BaseException,
    path: str | PathLike[str] | None = None,
) -> bool:
    """Stop the crawl for ``exc`` if it is a write the disk refused (on
    ``path``, or the file the error names): True. False otherwise (the
    caller raises it)."""
    advice = advice_for(exc)
    if advice is None or not isinstance(crawler, Crawler):
        return False
    if crawler.stats is not None:
        crawler.stats.inc_value(STATS_FAILED_WRITES)
    if crawler in _FAILURES:
        return True
    if path is None and isinstance(exc, OSError) and exc.filename is not None:
        path = exc.filename
    if isinstance(exc, OSError) and exc.strerror:
        error = exc.strerror
    else:
        error = " ".join(str(exc).split()) or type(exc).__name__
    failure = WriteFailure(str(path) if path is not None else None, error, advice)
    _FAILURES[crawler] = failure
    _ANY.append(True)
    logger.error("Stopping the crawl: %s", failure.line())
    _AfterStop.install(crawler)
    _close(crawler)
    return True


class _AfterStop(logging.Filter):
    """The pages in flight when the crawl stopped are processed while the
    engine closes, and write into the crawl state's transaction that nothing
    commits any more — which SQLite may have rolled back when the failed
    write was its COMMIT (a table first made in it is gone: "no such
    table"). Their errors (an SQLite error, or another write the disk
    refused, raised where Scrapy logs it with its traceback) are what the
    stop left behind, not news: counted in STATS_AFTER_STOP, not logged. A
    filter of the root logger's handlers, where every logger's records end
    (Scrapy's log handler is one), while the stopped crawl's crawler
    lives."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__()
        self._crawler = weakref.ref(crawler)

    @classmethod
    def install(cls, crawler: Crawler) -> None:
        after = cls(crawler)
        for handler in logging.getLogger().handlers:
            handler.addFilter(after)

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        error = info[1] if info else None
        if error is None:
            return True
        if not isinstance(error, sqlite3.Error) and not failed_write(error):
            return True
        crawler = self._crawler()
        if crawler is None:  # its crawl is over (a process of several crawls)
            return True
        if crawler.stats is not None:
            crawler.stats.inc_value(STATS_AFTER_STOP)
        return False


def _close(crawler: Crawler) -> None:
    """Ask the engine to close the spider with CLOSE_REASON (it is closing
    already, or not running: nothing to do)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # not set before the crawl starts (Scrapy 2.19)
        return
    if engine is None or engine.spider is None:
        return
    deferred = deferred_from_coro(engine.close_spider_async(reason=CLOSE_REASON))
    # closed meanwhile (the slot gone): nothing left to close
    deferred.addErrback(lambda _failure: None)
