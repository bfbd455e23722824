"""The lean HTTP/1.1 client: plain ``http://`` on the asyncio loop that
Twisted's asyncio reactor runs on.

Why: Scrapy's HTTP/1.1 handler is Twisted's web client, a third of the
crawl process's CPU a page (bench/README.md, "Twisted's HTTP/1.1 client
against a lean asyncio one"): an Agent built per request, a pool of
Deferreds, a line receiver in Python, two kinds of headers. This client
does the same job with one ``asyncio.Protocol`` a connection and the
parser of webspider.download.parse, and answers as Scrapy's handler does:
the same response (headers, flags, ``ip_address``, ``protocol``,
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
import ipaddress
import logging
import time
from typing import TYPE_CHECKING, cast

from scrapy import signals
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
    StopDownload,
)
from scrapy.http import Headers
from scrapy.responsetypes import responsetypes
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import error as twisted_errors
from twisted.python.failure import Failure as TwistedFailure
from twisted.web.client import ResponseFailed, ResponseNeverReceived

from webspider.addresses.dns import resolve
from webspider.download.parse import ParseError, ResponseParser

if TYPE_CHECKING:
    from ipaddress import IPv4Address, IPv6Address

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from webspider.download.parse import Head

logger = logging.getLogger(__name__)

#: an idle kept-alive connection is closed after this many seconds (Twisted's
#: HTTPConnectionPool.cachedConnectionTimeout)
IDLE_TIMEOUT = 240.0
#: how often idle connections are looked at (one timer for the pool, not
#: one a request): an idle connection closes 240-270 s after its last answer
IDLE_SWEEP = 30.0
#: what Twisted's pool sends again on a new connection (with no body)
RETRIED_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE", "TRACE"})

#: (host, port, bind address)
Key = tuple[str, int, "tuple[str, int] | None"]


class _Retry(Exception):
    """A kept-alive connection closed before any byte of the answer."""


def _lost(url: str, reason: Exception, *, started: bool) -> DownloadFailedError:
    """A connection lost before the whole head, as Scrapy's handler reports
    it: a DownloadFailedError caused by Twisted's ResponseNeverReceived (no
    byte of an answer) or ResponseFailed, wrapping the reason; the reports
    read ``connection_lost`` from it, as they do from Scrapy's."""
    wrapper = ResponseFailed if started else ResponseNeverReceived
    error = DownloadFailedError(f"{url}: {reason}")
    error.__cause__ = wrapper([TwistedFailure(reason)])  # type: ignore[no-untyped-call]
    return error


class _Exchange:
    """One request's answer as it arrives."""

    __slots__ = (
        "body",
        "done",
        "expected",
        "fail_on_dataloss",
        "flags",
        "future",
        "head",
        "headers",
        "maxsize",
        "received",
        "request",
        "start",
        "stop",
        "warned",
        "warnsize",
    )

    def __init__(
        self,
        future: asyncio.Future[None],
        request: Request,
        *,
        maxsize: int,
        warnsize: int,
        fail_on_dataloss: bool,
        start: float,
    ) -> None:
        self.future = future
        self.request = request
        self.maxsize = maxsize
        self.warnsize = warnsize
        self.fail_on_dataloss = fail_on_dataloss
        self.start = start
        self.head: Head | None = None
        self.headers: Headers | None = None
        self.body: list[bytes] = []
        self.received = 0
        self.expected = -1
        self.warned = False
        self.done = False
        self.flags: list[str] | None = None
        self.stop: StopDownload | None = None


class Connection(asyncio.Protocol):
    """One kept-alive connection; one exchange at a time."""

    def __init__(self, client: LeanClient, key: Key) -> None:
        self.client = client
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.ip_address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
        self.exchange: _Exchange | None = None
        self.parser: ResponseParser | None = None
        #: answered a request before: a close before any answer is retried
        self.reused = False
        self.closed = False
        #: loop time it went idle
        self.idle_since = 0.0

    # -- asyncio --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses
        self.transport = cast("asyncio.Transport", transport)
        peer = transport.get_extra_info("peername")
        if peer:
            self.ip_address = ipaddress.ip_address(peer[0].split("%", 1)[0])

    def data_received(self, data: bytes) -> None:
        parser = self.parser
        if parser is None:
            # bytes nobody asked for on an idle connection: not reusable
            self.close()
            return
        try:
            parser.feed(data)
        except ParseError as exc:
            ex = self.exchange
            if ex is not None:
                self._fail(_lost(ex.request.url, exc, started=True))
        except Exception as exc:  # a bug here fails the download, not hangs it
            ex = self.exchange
            if ex is not None:
                self._fail(DownloadFailedError(f"{ex.request.url}: {exc!r}"))
            raise

    def eof_received(self) -> bool | None:
        return None  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.client.forget(self)
        ex = self.exchange
        parser = self.parser
        if ex is None or parser is None or ex.done:
            return
        outcome = parser.eof()
        if outcome == "partial":
            # a body up to the close (http11: PotentialDataLoss)
            self._finish(["partial"])
            return
        if outcome == "dataloss":
            if not ex.fail_on_dataloss:
                self._finish(["dataloss"])
                return
            client = self.client
            if not client.dataloss_warned:
                logger.warning(get_dataloss_msg(ex.request.url))
                client.dataloss_warned = True
            error = ResponseDataLossError()
            reasons = [TwistedFailure(_reason(exc))]  # type: ignore[no-untyped-call]
            error.__cause__ = ResponseFailed(reasons)  # type: ignore[no-untyped-call]
            self._fail(error)
            return
        if outcome == "nothing" and self.reused:
            self._fail(_Retry())
            return
        self._fail(_lost(ex.request.url, _reason(exc), started=outcome == "head"))

    # -- the parser's sink ----------------------------------------------------------
    def head_received(self, head: Head) -> None:
        ex = self.exchange
        assert ex is not None
        ex.head = head
        request = ex.request
        request.meta["download_latency"] = time.monotonic() - ex.start
        length = head.length
        ex.expected = -1 if length is None else length
        ex.headers = headers = response_headers(head)
        stop = check_stop_download(
            signals.headers_received,
            self.client.crawler,
            request,
            headers=headers,
            body_length=ex.expected,
        )
        if stop is not None:
            ex.stop = stop
            self._finish(None)
            return
        if length == 0:
            return  # message_done follows
        if ex.maxsize and ex.expected > ex.maxsize:
            msg = get_maxsize_msg(ex.expected, ex.maxsize, request, expected=True)
            logger.warning(msg)
            self._fail(DownloadCancelledError(msg))
            return
        if ex.warnsize and ex.expected > ex.warnsize:
            ex.warned = True
            logger.warning(
                get_warnsize_msg(ex.expected, ex.warnsize, request, expected=True)
            )

    def body_received(self, data: bytes) -> None:
        ex = self.exchange
        assert ex is not None
        ex.body.append(data)
        ex.received += len(data)
        stop = check_stop_download(
            signals.bytes_received, self.client.crawler, ex.request, data=data
        )
        if stop is not None:
            ex.stop = stop
            self._finish(None)
            return
        if ex.maxsize and ex.received > ex.maxsize:
            msg = get_maxsize_msg(ex.received, ex.maxsize, ex.request, expected=False)
            logger.warning(msg)
            ex.body = []
            self._fail(DownloadCancelledError(msg))
            return
        if ex.warnsize and ex.received > ex.warnsize and not ex.warned:
            ex.warned = True
            logger.warning(
                get_warnsize_msg(ex.received, ex.warnsize, ex.request, expected=False)
            )

    def message_done(self, rest: bytes) -> None:
        ex = self.exchange
        assert ex is not None and ex.head is not None
        # bytes after the answer (no pipelining here): not reusable
        self._finish(None, reusable=not rest and not ex.head.close)

    # -- the exchange ---------------------------------------------------------------
    def send(self, data: bytes, exchange: _Exchange) -> None:
        self.exchange = exchange
        self.parser = ResponseParser(self, exchange.request.method == "HEAD")
        assert self.transport is not None
        self.transport.write(data)

    def _finish(self, flags: list[str] | None, *, reusable: bool = False) -> None:
        """The exchange has its answer (whole, or as far as it goes)."""
        ex = self.exchange
        assert ex is not None
        ex.flags = flags
        self.exchange = None
        parser = self.parser
        self.parser = None
        if reusable and not self.closed:
            self.client.release(self)
        else:
            if parser is not None:
                parser.stop()
            self.close()
        settle(ex)

    def _fail(self, exc: BaseException) -> None:
        ex = self.exchange
        assert ex is not None
        self.exchange = None
        if self.parser is not None:
            self.parser.stop()
            self.parser = None
        self.close()
        settle(ex, exc)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.client.forget(self)
            if self.transport is not None:
                self.transport.abort()

    def time_out(self, ex: _Exchange, timeout: float) -> None:
        if ex.done:
            return
        error = _timeout_error(ex.request, timeout)
        if self.exchange is ex:
            self._fail(error)
        else:
            settle(ex, error)


def settle(ex: _Exchange, exc: BaseException | None = None) -> None:
    if ex.done or ex.future.done():  # (done: cancelled)
        return
    ex.done = True
    if exc is None:
        ex.future.set_result(None)
    else:
        ex.future.set_exception(exc)


def _reason(exc: Exception | None) -> Exception:
    """Why a connection ended, as Twisted names it."""
    if exc is None:
        return twisted_errors.ConnectionDone()
    return twisted_errors.ConnectionLost(str(exc) or type(exc).__name__)


def response_headers(head: Head) -> Headers:
    """The response's headers as Scrapy's handler makes them: the known
    length first as ``Content-Length``, then what the server sent."""
    headers = Headers()
    if head.length is not None:
        headers[b"Content-Length"] = str(head.length).encode()
    headers.update(head.headers)
    return headers


def request_bytes(request: Request) -> bytes:
    """The request as Twisted's Agent writes it: the origin-form target,
    ``Host`` (the port when not 80), the request's headers (a line end in
    one made a space, as Twisted's ``_sanitizeLinearWhitespace``), and
    Content-Length for a body (0 for an empty POST or PUT)."""
    parsed = urlparse_cached(request)
    target = parsed.path or "/"
    if parsed.params:
        target += ";" + parsed.params
    if parsed.query:
        target += "?" + parsed.query
    lines = [f"{request.method} {target} HTTP/1.1".encode("ascii")]
    headers = request.headers
    if b"Host" not in headers:
        host = parsed.netloc.rpartition("@")[2]
        if host.endswith(":80"):
            host = host[:-3]
        lines.append(b"Host: " + host.encode("ascii"))
    for name, values in headers.items():
        for value in values:
            line = name + b": " + value
            if b"\n" in line or b"\r" in line:
                # no header smuggled in by a value (or name) holding a line
                # end: made one line, as Twisted's Headers do
                line = b" ".join(line.splitlines())
            lines.append(line)
    body = request.body
    if body or request.method in ("POST", "PUT"):
        lines.append(b"Content-Length: " + str(len(body)).encode())
    lines.append(b"\r\n")
    return b"\r\n".join(lines) + body


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
                ex = _Exchange(
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
                except _Retry:
                    if retried or not retry:
                        # (its own cause, which the reports read)
                        raise _lost(  # noqa: B904
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
            raise _timeout_error(request, timeout) from None
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


def _timeout_error(request: Request, timeout: float) -> DownloadTimeoutError:
    url = request.url.partition("#")[0]
    return DownloadTimeoutError(f"Getting {url} took longer than {timeout} seconds.")


# What follows does what scrapy.utils._download_handlers does for Scrapy's
# own handlers (a private module): the same signals, response, messages.


def check_stop_download(
    signal: object, crawler: Crawler, request: Request, **kwargs: object
) -> StopDownload | None:
    """Send ``signal``; the StopDownload a receiver raised, if any."""
    results = crawler.signals.send_catch_log(
        signal=signal, request=request, spider=crawler.spider, **kwargs
    )
    for _, result in results:
        if isinstance(result, TwistedFailure) and isinstance(
            result.value, StopDownload
        ):
            return result.value
    return None


def make_response(
    ex: _Exchange, ip_address: IPv4Address | IPv6Address | None
) -> Response:
    """The exchange's response, its class chosen from the headers, URL and
    body as Scrapy's handlers choose it; a stop that fails raises."""
    head, headers, url = ex.head, ex.headers, ex.request.url
    assert head is not None and headers is not None
    body = b"".join(ex.body)
    cls = responsetypes.from_args(headers=headers, url=url, body=body)
    response = cls(
        url=url,
        status=head.status,
        headers=headers,
        body=body,
        flags=ex.flags,
        ip_address=ip_address,
        protocol=head.protocol,
    )
    stop = ex.stop
    if stop is not None:
        response.flags.append("download_stopped")
        if stop.fail:
            stop.response = response
            raise stop
    return response


def normalize_bind_address(
    value: str | tuple[str, int] | None,
) -> tuple[str, int] | None:
    """``DOWNLOAD_BIND_ADDRESS`` or meta ``bindaddress``: a host (any port)
    or (host, port)."""
    if isinstance(value, str):
        return (value, 0)
    return None if value is None else (value[0], int(value[1]))


def get_maxsize_msg(size: int, limit: int, request: Request, *, expected: bool) -> str:
    prefix = "Expected to receive" if expected else "Received"
    return (
        f"{prefix} {size} bytes which is larger than download "
        f"max size ({limit}) in request {request}."
    )


def get_warnsize_msg(size: int, limit: int, request: Request, *, expected: bool) -> str:
    prefix = "Expected to receive" if expected else "Received"
    return (
        f"{prefix} {size} bytes which is larger than download "
        f"warn size ({limit}) in request {request}."
    )


def get_dataloss_msg(url: str) -> str:
    return (
        f"Got data loss in {url}. If you want to process broken "
        "responses set the setting DOWNLOAD_FAIL_ON_DATALOSS = False"
        " -- This message won't be shown in further requests"
    )
