"""The lean HTTP/1.1 client: plain ``http://`` on the asyncio loop that
Twisted's asyncio reactor runs on.

Why: Scrapy's HTTP/1.1 handler is Twisted's web client, a third of the
crawl process's CPU a page (bench/README.md, "Twisted's HTTP/1.1 client
against a lean asyncio one"): an Agent built per request, a pool of
Deferreds, a line receiver in Python, two kinds of headers. This client
does the same job with one ``asyncio.Protocol`` a connection
(webspider.download.connection) and the parser of
webspider.download.parse, and answers as Scrapy's handler does: the same
response (headers, flags, ``ip_address``, ``protocol``,
``download_latency``), the same exceptions for the same failures (the
reports' error codes rest on them), the same signals.

- connections kept alive in a pool per (host, port, bind address): up to
  ``CONCURRENT_REQUESTS_PER_DOMAIN`` idle ones a host (Twisted's
  ``maxPersistentPerHost``, as Scrapy sets it), closed after
  ``IDLE_TIMEOUT`` idle (Twisted's ``cachedConnectionTimeout``) and on
  ``close()``;
- a request sent on a kept-alive connection that the server closed before
  any byte of an answer is sent once more on a new one (GET, HEAD, OPTIONS,
  DELETE, TRACE without a body), as Twisted's pool does;
- names resolved by the reactor's name resolver (Twisted's endpoints do the
  same): where webspider's address guard sits, and the tests' name table;
  each address tried in turn;
- ``DOWNLOAD_TIMEOUT`` (meta ``download_timeout``) over the whole download;
  ``DOWNLOAD_MAXSIZE``/``WARNSIZE`` (settings, the spider's attributes,
  meta); ``DOWNLOAD_FAIL_ON_DATALOSS`` (meta ``download_fail_on_dataloss``);
  ``DOWNLOAD_BIND_ADDRESS`` (meta ``bindaddress``);
- Scrapy's ``headers_received`` and ``bytes_received`` signals (a handler
  raising StopDownload stops the download).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from scrapy.exceptions import CannotResolveHostError, DownloadConnectionRefusedError
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import error as twisted_errors

from webspider.addresses.dns import resolve
from webspider.download.compat import (
    make_response,
    normalize_bind_address,
    timeout_error,
)
from webspider.download.connection import (
    Connection,
    Exchange,
    Retry,
    lost,
    request_bytes,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from webspider.download.connection import Key

#: HTTPConnectionPool.cachedConnectionTimeout)
IDLE_TIMEOUT = 240.0
#: how often idle connections are looked at (one timer for the pool, not
#: one a request): an idle connection closes 240-270 s after its last answer
IDLE_SWEEP = 30.0
#: what Twisted's pool sends again on a new connection (with no body)
RETRIED_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE", "TRACE"})


class LeanClient:
    """Downloads plain-http requests; see the module's docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        self.timeout = settings.getfloat("DOWNLOAD_TIMEOUT")
        self.maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        self.warnsize = settings.getint("DOWNLOAD_WARNSIZE")
        self.fail_on_dataloss = settings.getbool("DOWNLOAD_FAIL_ON_DATALOSS")
        self.bind_address = normalize_bind_address(
            settings.get("DOWNLOAD_BIND_ADDRESS")
        )
        self.max_idle = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or 1
        self.dataloss_warned = False
        self._idle: dict[Key, list[Connection]] = {}
        self._open: set[Connection] = set()
        self._sweeper: asyncio.TimerHandle | None = None

    # -- the pool -------------------------------------------------------------------
    def release(self, conn: Connection) -> None:
        idle = self._idle.setdefault(conn.key, [])
        if len(idle) >= self.max_idle:
            conn.close()
            return
        conn.reused = True
        loop = asyncio.get_running_loop()
        conn.idle_since = loop.time()
        idle.append(conn)
        if self._sweeper is None:
            self._sweeper = loop.call_later(IDLE_SWEEP, self._sweep)

    def forget(self, conn: Connection) -> None:
        self._open.discard(conn)
        idle = self._idle.get(conn.key)
        if idle and conn in idle:
            idle.remove(conn)

    def _sweep(self) -> None:
        self._sweeper = None
        loop = asyncio.get_running_loop()
        oldest = loop.time() - IDLE_TIMEOUT
        left = False
        for idle in list(self._idle.values()):
            for conn in [c for c in idle if c.idle_since <= oldest]:
                conn.close()
            left = left or bool(idle)
        if left:
            self._sweeper = loop.call_later(IDLE_SWEEP, self._sweep)

    async def _connection(self, key: Key, deadline: float, *, new: bool) -> Connection:
        idle = None if new else self._idle.get(key)
        while idle:
            conn = idle.pop()  # the most recent: the least likely closed
            if not conn.closed:
                return conn
        host, port, bind = key
        addresses = await self._resolve(host, deadline)
        loop = asyncio.get_running_loop()
        error: BaseException | None = None
        for address in addresses:  # in order, as Twisted's HostnameEndpoint
            try:
                _, conn = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: Connection(self, key), address, port, local_addr=bind
                    ),
                    _left(deadline),
                )
            except (TimeoutError, asyncio.TimeoutError):
                raise  # the download's time is up (an OSError since 3.11)
            except OSError as exc:
                error = exc
                continue
            self._open.add(conn)
            return conn
        assert error is not None
        failure = twisted_errors.getConnectError(error)  # type: ignore[no-untyped-call]
        if isinstance(failure, twisted_errors.ConnectionRefusedError):
            raise DownloadConnectionRefusedError(str(failure)) from failure
        raise failure from error

    @staticmethod
    async def _resolve(host: str, deadline: float) -> list[str]:
        """The addresses to connect to, from the reactor's name resolver."""
        from twisted.internet import reactor  # noqa: PLC0415, TID251 - installed

        found = await asyncio.wait_for(
            maybe_deferred_to_future(resolve(reactor.nameResolver, host)),
            _left(deadline),
        )
        addresses = [a for a in (str(getattr(x, "host", "")) for x in found) if a]
        if not addresses:
            failure = twisted_errors.DNSLookupError(
                f"no results for hostname lookup: {host}"
            )
            raise CannotResolveHostError(str(failure)) from failure
        return addresses

    # -- a request ------------------------------------------------------------------
    async def download(self, request: Request) -> Response:
        parsed = urlparse_cached(request)
        meta = request.meta
        bind = meta.get("bindaddress")
        key: Key = (
            parsed.hostname or "",
            parsed.port or 80,
            self.bind_address if bind is None else normalize_bind_address(bind),
        )
        timeout = meta.get("download_timeout") or self.timeout
        spider = self.crawler.spider
        maxsize = meta.get(
            "download_maxsize", getattr(spider, "download_maxsize", self.maxsize)
        )
        warnsize = meta.get(
            "download_warnsize", getattr(spider, "download_warnsize", self.warnsize)
        )
        fail_on_dataloss = meta.get("download_fail_on_dataloss", self.fail_on_dataloss)
        data = request_bytes(request)
        loop = asyncio.get_running_loop()
        start = time.monotonic()
        deadline = start + timeout
        retry = request.method in RETRIED_METHODS and not request.body
        retried = False
        try:
            while True:
                # sent again, it goes on a new connection (as Twisted's pool)
                conn = await self._connection(key, deadline, new=retried)
                ex = Exchange(
                    loop.create_future(),
                    request,
                    maxsize=maxsize,
                    warnsize=warnsize,
                    fail_on_dataloss=fail_on_dataloss,
                    start=start,
                )
                timer = loop.call_at(
                    _loop_deadline(loop, deadline), conn.time_out, ex, timeout
                )
                conn.send(data, ex)
                try:
                    await ex.future
                except Retry:
                    if retried or not retry:
                        # (its own cause, which the reports read)
                        raise lost(  # noqa: B904
                            request.url, twisted_errors.ConnectionDone(), started=False
                        )
                    retried = True
                    continue
                except asyncio.CancelledError:
                    ex.done = True
                    conn.exchange = None
                    conn.close()
                    raise
                finally:
                    timer.cancel()
                break
        except (TimeoutError, asyncio.TimeoutError):
            # resolving or connecting took the time
            raise timeout_error(request, timeout) from None
        return make_response(ex, conn.ip_address)

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for conn in list(self._open):
            conn.close()
        self._idle.clear()


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


def _loop_deadline(loop: asyncio.AbstractEventLoop, deadline: float) -> float:
    """A time.monotonic() deadline on the loop's clock."""
    return loop.time() + max(deadline - time.monotonic(), 0.0)
