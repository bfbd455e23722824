"""A lean HTTP/1.1 download handler: a measurement contender, not a product.

Historical: the prototype of client17 (bench/README, "Twisted's HTTP/1.1
client against a lean asyncio one"), kept so that section's commands
reproduce.
The product's client is ``webspider.download`` (``WEBSPIDER_HTTP_CLIENT=lean``,
the default), which does not import this module; change that one, not this.

    H='{"http": "bench.leanhttp.LeanHTTPDownloadHandler"}'
    python bench/smallpages.py --no-profile --contenders floor,floor-lean \
        --variant "floor-lean=floor:DOWNLOAD_HANDLERS=$H"

(``bench`` imports as a namespace package from the checkout, which is on
every contender's PYTHONPATH, the floor's included; needs ``pip install
httptools``.)

What Scrapy's HTTP/1.1 handler (``scrapy.core.downloader.handlers.http11``)
does per request is Twisted's web client: an ``Agent`` and a
``_ScrapyAgent`` built per request, ``HTTPConnectionPool``,
``HTTP11ClientProtocol`` with its ``Request`` writer and
``HTTPClientParser`` (a line receiver, in Python), ``twisted.web`` Headers,
``Response.deliverBody`` into a ``_ResponseReader``, and four to six
Deferreds a request. This handler does the same job on the asyncio loop
that Twisted's asyncio reactor runs on:

- one ``asyncio.Protocol`` a connection, kept alive in a pool per
  (host, port) (idle connections up to ``CONCURRENT_REQUESTS_PER_DOMAIN`` a
  host, as Scrapy sets ``maxPersistentPerHost``);
- the request written in one ``write``;
- the response parsed by ``httptools`` (llhttp, in C): Content-Length,
  chunked, and read-until-close bodies; HEAD, 1xx, 204 and 304 without one;
- ``DOWNLOAD_TIMEOUT`` (``download_timeout`` in meta) over connect and
  response; ``DOWNLOAD_MAXSIZE``/``WARNSIZE`` (and their meta keys) on the
  announced length and on the bytes received; a bound on the header block
  (``MAX_HEADER_BYTES``); ``DOWNLOAD_FAIL_ON_DATALOSS``;
- Scrapy's ``headers_received`` and ``bytes_received`` signals (a handler
  may stop the download), ``download_latency`` in meta, the response's
  ``ip_address``, ``protocol`` and its flags (``dataloss``; ``partial``
  for a body ended by the close without a length, as http11 says);
- a request on a kept-alive connection that the server closed before
  answering is sent again once on a new one (idempotent methods only), as
  Twisted's pool does;
- names resolved by the reactor's name resolver, as Twisted's endpoints do
  (webspider's address guard wraps it; the tests' name table is there),
  each address tried in turn; Twisted's connection-control headers
  (``Connection``, ``Transfer-Encoding`` …) kept out of the response's, as
  Twisted does.

``LeanGuardHandler`` is the same under webspider's address policy (a
subclass of ``AddressGuardHandler``, so the policy's check of
``DOWNLOAD_HANDLERS`` lets it in): webspider's crawls use it with the
policy on.

Left out (a product version would need them; they go to Scrapy's HTTP/1.1
handler, or are ignored): https, proxies (``proxy`` in meta), reactors
without asyncio, ``bindaddress``/``DOWNLOAD_BIND_ADDRESS``,
``verbatim_url``; header lines without a colon (Scrapy's parser skips them,
llhttp refuses the response); a header block over ``MAX_HEADER_BYTES`` fails
the download where Twisted has no bound.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from typing import TYPE_CHECKING, cast

import httptools
from scrapy import signals
from scrapy.core.downloader.handlers._base_http import BaseHttpDownloadHandler
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
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
from scrapy.utils._download_handlers import (
    check_stop_download,
    get_dataloss_msg,
    get_maxsize_msg,
    get_warnsize_msg,
    make_response,
)
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.error import ConnectionLost

from webspider.addresses.dns import name_key, resolve
from webspider.addresses.handler import AddressGuardHandler
from webspider.addresses.resolver import TICKET, Ticket
from webspider.exceptions import AddressRefused

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: the status line and header block, at most (Twisted's line receiver
#: stops at 16 KiB a line and has no bound on the block)
MAX_HEADER_BYTES = 64 * 1024
#: what Twisted's parser keeps out of a response's headers (connection
#: control); http11 puts the Content-Length back, and so does this handler
CONNECTION_HEADERS = frozenset(
    {
        b"content-length",
        b"connection",
        b"keep-alive",
        b"te",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"proxy-connection",
    }
)
IDEMPOTENT = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE", b"PUT", b"DELETE"})


class _Retry(Exception):
    """A kept-alive connection closed before any byte of the answer."""


class _Exchange:
    """One request's answer as it arrives."""

    __slots__ = (
        "body",
        "chunked",
        "done",
        "expected",
        "flags",
        "future",
        "head",
        "header_bytes",
        "headers",
        "headers_done",
        "maxsize",
        "received",
        "request",
        "status",
        "stop",
        "version",
        "warned",
        "warnsize",
    )

    def __init__(
        self,
        future: asyncio.Future[None],
        request: Request,
        head: bool,
        maxsize: int,
        warnsize: int,
    ) -> None:
        self.future = future
        self.request = request
        self.head = head
        self.maxsize = maxsize
        self.warnsize = warnsize
        self.status = 0
        self.version = "HTTP/1.1"
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.header_bytes = 0
        self.body: list[bytes] = []
        self.received = 0
        self.expected = -1
        self.chunked = False
        self.warned = False
        self.done = False
        self.flags: list[str] | None = None
        self.stop: StopDownload | None = None


class _Connection(asyncio.Protocol):
    """One kept-alive connection; one exchange at a time."""

    def __init__(self, handler: LeanHTTPDownloadHandler, key: tuple[str, int]) -> None:
        self.handler = handler
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.ip_address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
        self.exchange: _Exchange | None = None
        self.parser: httptools.HttpResponseParser | None = None
        self.reused = False
        self.closed = False

    # -- asyncio ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses
        self.transport = cast("asyncio.Transport", transport)
        peer = transport.get_extra_info("peername")
        if peer:
            self.ip_address = ipaddress.ip_address(peer[0])

    def data_received(self, data: bytes) -> None:
        ex = self.exchange
        if ex is None or ex.done:
            # bytes nobody asked for on an idle connection: not reusable
            self._close()
            return
        try:
            assert self.parser is not None
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(DownloadFailedError(f"{ex.request.url}: protocol upgrade"))
            return
        except httptools.HttpParserError as exc:
            if not ex.done:
                msg = f"{ex.request.url}: bad response: {exc}"
                self._fail(DownloadFailedError(msg))
            return
        if not ex.headers_done and not ex.done:
            # llhttp has no bound of its own on the header block
            ex.header_bytes += len(data)
            if ex.header_bytes > MAX_HEADER_BYTES:
                msg = f"{ex.request.url}: header block over {MAX_HEADER_BYTES} bytes"
                self._fail(DownloadFailedError(msg))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.handler._forget(self)
        ex = self.exchange
        if ex is None or ex.done:
            return
        if not ex.headers_done:
            if ex.header_bytes == 0 and self.reused:
                self._fail(_Retry())
            else:
                lost = DownloadFailedError(
                    f"{ex.request.url}: connection lost before the response"
                )
                # webspider's reports name the cause (connection_lost)
                lost.__cause__ = ConnectionLost()
                self._fail(lost)
            return
        if ex.expected < 0 and not ex.chunked:
            # the body ends with the connection (http11: PotentialDataLoss)
            self._finish(["partial"])
            return
        fail_on_dataloss = ex.request.meta.get(
            "download_fail_on_dataloss", self.handler._fail_on_dataloss
        )
        if not fail_on_dataloss:
            self._finish(["dataloss"])
            return
        if not self.handler._fail_on_dataloss_warned:
            logger.warning(get_dataloss_msg(ex.request.url))
            self.handler._fail_on_dataloss_warned = True
        self._fail(ResponseDataLossError(f"{ex.request.url}: data loss"))

    # -- httptools callbacks ---------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        ex = self.exchange
        if ex is not None:
            ex.headers.append((name, value))

    def on_headers_complete(self) -> None:
        ex = self.exchange
        if ex is None or self.parser is None:
            return
        ex.headers_done = True
        ex.status = status = self.parser.get_status_code()
        ex.version = "HTTP/" + self.parser.get_http_version()
        if 100 <= status < 200:
            # an interim answer: the real one follows (llhttp reads it as a
            # message of its own)
            ex.headers_done = False
            ex.headers = []
            return
        length = None
        kept = []
        for name, value in ex.headers:
            lname = name.lower()
            if lname not in CONNECTION_HEADERS:
                kept.append((name, value))
            elif lname == b"content-length":
                length = value
            elif lname == b"transfer-encoding" and b"chunked" in value.lower():
                ex.chunked = True
        if length is not None and not ex.chunked:
            try:
                ex.expected = int(length)
            except ValueError:
                ex.expected = -1
            else:
                kept.append((b"Content-Length", length))
        ex.headers = kept
        if ex.maxsize and ex.expected > ex.maxsize:
            msg = get_maxsize_msg(ex.expected, ex.maxsize, ex.request, expected=True)
            logger.warning(msg)
            self._fail(DownloadCancelledError(msg))
            return
        if ex.warnsize and ex.expected > ex.warnsize:
            ex.warned = True
            logger.warning(
                get_warnsize_msg(ex.expected, ex.warnsize, ex.request, expected=True)
            )
        stop = check_stop_download(
            signals.headers_received,
            self.handler.crawler,
            ex.request,
            headers=Headers(ex.headers),
            body_length=ex.expected,
        )
        if stop is not None:
            ex.stop = stop
            self._finish(None, reusable=False)
            return
        if ex.head:
            # no body whatever the headers announce; llhttp cannot be told
            # the request's method, so the exchange ends here, and the
            # connection with it (rare enough not to matter here)
            self._finish(None)

    def on_body(self, body: bytes) -> None:
        ex = self.exchange
        if ex is None or ex.done:
            return
        ex.body.append(body)
        ex.received += len(body)
        stop = check_stop_download(
            signals.bytes_received, self.handler.crawler, ex.request, data=body
        )
        if stop is not None:
            ex.stop = stop
            self._finish(None, reusable=False)
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

    def on_message_complete(self) -> None:
        ex = self.exchange
        if ex is None or ex.done or not ex.headers_done:
            return
        self._finish(None, reusable=self._keep_alive())

    # -- the exchange ----------------------------------------------------------------
    def send(self, data: bytes, exchange: _Exchange) -> None:
        self.exchange = exchange
        self.parser = httptools.HttpResponseParser(self)
        assert self.transport is not None
        self.transport.write(data)

    def _keep_alive(self) -> bool:
        assert self.parser is not None
        try:
            return bool(self.parser.should_keep_alive())
        except httptools.HttpParserError:
            return False

    def _finish(self, flags: list[str] | None, *, reusable: bool = False) -> None:
        """The current exchange has its answer (whole, or as far as it goes)."""
        ex = self.exchange
        assert ex is not None
        ex.flags = flags
        self.exchange = None
        if reusable and not self.closed:
            self.parser = None
            self.handler._release(self)
        else:
            self._close()
        self.resolve(ex)

    def _fail(self, exc: BaseException) -> None:
        ex = self.exchange
        assert ex is not None
        self.exchange = None
        self._close()
        self.resolve(ex, exc)

    @staticmethod
    def resolve(ex: _Exchange, exc: BaseException | None = None) -> None:
        if ex.done:
            return
        ex.done = True
        if exc is None:
            ex.future.set_result(None)
        else:
            ex.future.set_exception(exc)

    def _close(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()
            self.handler._forget(self)


class LeanHTTPDownloadHandler(BaseHttpDownloadHandler):
    lazy = False

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self._timeout = settings.getfloat("DOWNLOAD_TIMEOUT")
        self._max_idle = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or 8
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._fallback: HTTP11DownloadHandler | None = None

    # -- the pool --------------------------------------------------------------------
    def _release(self, conn: _Connection) -> None:
        idle = self._idle.setdefault(conn.key, [])
        if len(idle) < self._max_idle:
            conn.reused = True
            idle.append(conn)
        else:
            conn._close()

    def _forget(self, conn: _Connection) -> None:
        self._open.discard(conn)
        idle = self._idle.get(conn.key)
        if idle and conn in idle:
            idle.remove(conn)

    async def _connect(self, key: tuple[str, int], timeout: float) -> _Connection:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        host, port = key
        try:
            addresses = await asyncio.wait_for(self._resolve(host), timeout)
        except (TimeoutError, asyncio.TimeoutError) as exc:
            raise DownloadTimeoutError(
                f"Resolving {host} took longer than {timeout} seconds."
            ) from exc
        if not addresses:
            raise CannotResolveHostError(f"{host}: no address to connect to")
        loop = asyncio.get_running_loop()
        error: Exception | None = None
        for address in addresses:  # as Twisted's HostnameEndpoint, in order
            try:
                _, protocol = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: _Connection(self, key), address, port
                    ),
                    timeout,
                )
            except (TimeoutError, asyncio.TimeoutError) as exc:
                raise DownloadTimeoutError(
                    f"Connecting to {host}:{port} took longer than {timeout} seconds."
                ) from exc
            except OSError as exc:
                error = exc
                continue
            self._open.add(protocol)
            return protocol
        raise DownloadConnectionRefusedError(f"{host}:{port}: {error}") from error

    @staticmethod
    async def _resolve(host: str) -> list[str]:
        """The addresses to connect to, from the reactor's name resolver (as
        Twisted's endpoints do): the one webspider's address guard wraps,
        and the tests' name table; an IP address is itself."""
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            pass
        from twisted.internet import reactor  # noqa: PLC0415, TID251

        found = await maybe_deferred_to_future(resolve(reactor.nameResolver, host))
        return [a for a in (str(getattr(x, "host", "")) for x in found) if a]

    # -- a request -------------------------------------------------------------------
    @staticmethod
    def _request_bytes(request: Request, host: str, port: int) -> bytes:
        parsed = urlparse_cached(request)
        target = parsed.path or "/"
        if parsed.params:
            target += ";" + parsed.params
        if parsed.query:
            target += "?" + parsed.query
        method = request.method.encode("ascii")
        host_header = host if port == 80 else f"{host}:{port}"
        if ":" in host and not host.startswith("["):
            host_header = f"[{host}]" if port == 80 else f"[{host}]:{port}"
        lines = [method + b" " + target.encode("ascii") + b" HTTP/1.1"]
        if b"Host" not in request.headers:
            lines.append(b"Host: " + host_header.encode("idna"))
        for name, values in request.headers.items():
            if name == b"Proxy-Authorization":
                continue
            for value in values:
                lines.append(name + b": " + value)
        body = request.body
        if body or method in (b"POST", b"PUT", b"PATCH"):
            lines.append(b"Content-Length: " + str(len(body)).encode())
        lines.append(b"\r\n")
        return b"\r\n".join(lines) + body

    async def download_request(self, request: Request) -> Response:
        parsed = urlparse_cached(request)
        if not self._lean(request):
            return await self._download_other(request)
        host = parsed.hostname or ""
        port = parsed.port or 80
        key = (host, port)
        meta = request.meta
        timeout = meta.get("download_timeout") or self._timeout
        maxsize = meta.get("download_maxsize", self._default_maxsize)
        warnsize = meta.get("download_warnsize", self._default_warnsize)
        data = self._request_bytes(request, host, port)
        head = request.method == "HEAD"
        loop = asyncio.get_running_loop()
        start = time.monotonic()
        deadline = start + timeout
        for attempt in (0, 1):
            conn = await self._connect(key, max(deadline - time.monotonic(), 0.001))
            future: asyncio.Future[None] = loop.create_future()
            ex = _Exchange(future, request, head, maxsize, warnsize)
            timer = loop.call_at(
                loop.time() + max(deadline - time.monotonic(), 0.001),
                self._time_out,
                conn,
                ex,
                timeout,
            )
            conn.send(data, ex)
            try:
                await future
            except _Retry:
                if attempt or request.method.encode() not in IDEMPOTENT:
                    raise DownloadFailedError(
                        f"{request.url}: connection closed before the response"
                    ) from None
                continue
            except asyncio.CancelledError:
                conn._close()
                raise
            finally:
                timer.cancel()
            break
        meta["download_latency"] = time.monotonic() - start
        return make_response(
            url=request.url,
            status=ex.status,
            headers=Headers(ex.headers),
            body=b"".join(ex.body),
            flags=ex.flags,
            ip_address=conn.ip_address,
            protocol=ex.version,
            stop_download=ex.stop,
        )

    @staticmethod
    def _time_out(conn: _Connection, ex: _Exchange, timeout: float) -> None:
        if ex.done:
            return
        if conn.exchange is ex:
            conn.exchange = None
        conn._close()
        conn.resolve(
            ex,
            DownloadTimeoutError(
                f"Getting {ex.request.url} took longer than {timeout} seconds."
            ),
        )

    @staticmethod
    def _lean(request: Request) -> bool:
        """Plain http, no proxy, on an asyncio loop: this handler's; the
        rest goes to Scrapy's HTTP/1.1 handler."""
        if urlparse_cached(request).scheme != "http" or request.meta.get("proxy"):
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a reactor without asyncio (TWISTED_REACTOR)
            return False
        return True

    async def _download_other(self, request: Request) -> Response:
        if self._fallback is None:
            self._fallback = HTTP11DownloadHandler(self.crawler)
        return await self._fallback.download_request(request)

    async def close(self) -> None:
        for conn in list(self._open):
            conn._close()
        self._idle.clear()
        if self._fallback is not None:
            await self._fallback.close()


class LeanGuardHandler(LeanHTTPDownloadHandler, AddressGuardHandler):
    """The lean handler with webspider's address policy, as
    ``AddressGuardHandler`` applies it: the download runs with the crawl's
    ``Ticket``, so the guard's resolver (``reactor.nameResolver``, which
    ``_resolve`` asks) hands over only the addresses the policy allows, and
    a host refused whole is an ``AddressRefused``. https, proxies and
    reactors without asyncio go to ``AddressGuardHandler`` (Scrapy's
    HTTP/1.1 client under the same policy). A subclass of it, so that
    webspider's check of ``DOWNLOAD_HANDLERS`` lets it in with the policy
    on."""

    async def download_request(self, request: Request) -> Response:
        if not self._lean(request):
            return await AddressGuardHandler.download_request(self, request)
        guard = self.guard
        if guard is None:
            return await LeanHTTPDownloadHandler.download_request(self, request)
        ticket = Ticket(guard, name_key(urlparse_cached(request).hostname or ""))
        token = TICKET.set(ticket)
        try:
            return await LeanHTTPDownloadHandler.download_request(self, request)
        except Exception:
            if ticket.refusal is not None:
                raise AddressRefused(request.url, str(ticket.refusal)) from None
            raise
        finally:
            TICKET.reset(token)

    async def close(self) -> None:
        await LeanHTTPDownloadHandler.close(self)
        await HTTP11DownloadHandler.close(self)
