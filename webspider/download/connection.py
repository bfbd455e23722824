"""One kept-alive connection of the lean HTTP/1.1 client
(webspider.download.lean): a request's bytes out, its answer in through the
parser of webspider.download.parse, one exchange at a time; the failures
named as Scrapy's handler names them (the reports' error codes rest on
them). The pool that owns the connections is the client's."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from typing import TYPE_CHECKING, Protocol, cast

from scrapy import signals
from scrapy.exceptions import (
    DownloadCancelledError,
    DownloadFailedError,
    ResponseDataLossError,
    StopDownload,
)
from scrapy.http import Headers
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import error as twisted_errors
from twisted.python.failure import Failure as TwistedFailure
from twisted.web.client import ResponseFailed, ResponseNeverReceived

from webspider.download.compat import (
    check_stop_download,
    get_dataloss_msg,
    get_maxsize_msg,
    get_warnsize_msg,
    timeout_error,
)
from webspider.download.parse import ParseError, ResponseParser

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from webspider.download.parse import Head

logger = logging.getLogger(__name__)

#: (host, port, bind address)
Key = tuple[str, int, "tuple[str, int] | None"]


class Pool(Protocol):
    """What a connection tells the client that pools it
    (webspider.download.lean.LeanClient)."""

    crawler: Crawler
    #: the data-loss warning was logged (once a crawl, as Scrapy's handler)
    dataloss_warned: bool

    def release(self, conn: Connection) -> None:
        """An answered connection that can be reused."""

    def forget(self, conn: Connection) -> None:
        """A closed connection."""


class Retry(Exception):
    """A kept-alive connection closed before any byte of the answer."""


def lost(url: str, reason: Exception, *, started: bool) -> DownloadFailedError:
    """A connection lost before the whole head, as Scrapy's handler reports
    it: a DownloadFailedError caused by Twisted's ResponseNeverReceived (no
    byte of an answer) or ResponseFailed, wrapping the reason; the reports
    read ``connection_lost`` from it, as they do from Scrapy's."""
    wrapper = ResponseFailed if started else ResponseNeverReceived
    error = DownloadFailedError(f"{url}: {reason}")
    error.__cause__ = wrapper([TwistedFailure(reason)])  # type: ignore[no-untyped-call]
    return error


class Exchange:
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

    def __init__(self, client: Pool, key: Key) -> None:
        self.client = client
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.ip_address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
        self.exchange: Exchange | None = None
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
                self._fail(lost(ex.request.url, exc, started=True))
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
            self._fail(Retry())
            return
        self._fail(lost(ex.request.url, _reason(exc), started=outcome == "head"))

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
    def send(self, data: bytes, exchange: Exchange) -> None:
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

    def time_out(self, ex: Exchange, timeout: float) -> None:
        if ex.done:
            return
        error = timeout_error(ex.request, timeout)
        if self.exchange is ex:
            self._fail(error)
        else:
            settle(ex, error)


def settle(ex: Exchange, exc: BaseException | None = None) -> None:
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
