"""A real HTTP server for tests: 127.0.0.1, a port the OS picks, a thread.

Every request it receives is logged (method, path, headers, monotonic time),
so tests assert on what the server saw requested, not on what the crawler
says it did.

Routes are exact paths (query included when a route has one) mapped to a
``Page`` (static answer) or to a callable ``(handler_request) -> Page``;
``add_prefix`` routes every path under a prefix (path parameters such as
``;jsessionid=`` included) to one.
Built-in dynamic endpoints, as Scrapy's own mock server has:

- ``/status/<code>``           answers that status with a small HTML body
- ``/redirect/<code>?to=<url>`` redirects (301/302/303/307/308) to ``to``
- ``/delay/<seconds>``         answers after a delay (a slow server)
- ``/drop``                    closes the connection without an answer
- ``/partial``                 announces 1000 bytes and sends 10, then closes
- ``/chain/<i>?n=<N>``         a chain of N pages, each linking to the next

Unknown paths answer 404.

A ``Page`` may also trickle its body (``trickle=1.0``: one byte a second) or
stream one made on the fly (``stream``: a function giving the chunks, with
``length`` bytes in all), for slow and giant answers; or be ``raw``: the
whole answer as bytes, written as they are (status line and headers no HTTP
library would write), the connection closed after them.

``accepts`` counts the TCP connections the server accepted (keep-alive
seen from the server's side); ``idle_timeout`` closes a kept-alive
connection idle that long, as servers do.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Page:
    body: bytes | str = b""
    status: int = 200
    content_type: str | None = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
    delay: float = 0.0
    #: bytes a second the body is sent at (0: at once)
    trickle: float = 0.0
    #: the body made on the fly, in chunks (``length`` bytes in all)
    stream: Callable[[], Iterable[bytes]] | None = None
    length: int = 0
    #: the whole answer, written as it is (then the connection is closed)
    raw: bytes | None = None

    def body_bytes(self) -> bytes:
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str  # path and query, as sent
    headers: dict[str, str]
    time: float  # time.monotonic() when the request line arrived
    client: str = ""  # the address the connection came from


Route = Page | Callable[["SeenRequest"], Page]


def html(body: str, title: str | None = None, head: str = "") -> str:
    t = f"<title>{title}</title>" if title is not None else ""
    return f"<!DOCTYPE html><html><head>{t}{head}</head><body>{body}</body></html>"


class _HTTPServer(ThreadingHTTPServer):
    count_lock: threading.Lock
    accepts = 0
    open_connections = 0

    def get_request(self) -> tuple[Any, Any]:
        request = super().get_request()
        self.accepts += 1  # the serving thread is the only one accepting
        return request

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self.count_lock:
            self.open_connections += 1
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.count_lock:
                self.open_connections -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a crawler that drops a connection on purpose (a body over its
        # limit, a stop) is not an error of the server: no traceback on
        # stderr; anything else is printed as socketserver does
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class TestServer:
    """``with TestServer() as server: server.url('/x')``"""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        host: str = "127.0.0.1",
        name: str | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        self.routes: dict[str, Route] = {}
        self.prefixes: list[tuple[str, Route]] = []
        self.log: list[SeenRequest] = []
        #: requests being answered right now, and the most there ever were
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = _HTTPServer((host, 0), _make_handler(self, idle_timeout))
        self._httpd.count_lock = threading.Lock()
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        #: host name used in URLs (e.g. "site.test" with the test resolver)
        self.name = name or host
        # a short poll interval: shutdown() waits for it, in every test
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
        )

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> TestServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> TestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def accepts(self) -> int:
        """TCP connections accepted so far."""
        return self._httpd.accepts

    @property
    def open_connections(self) -> int:
        """Connections open now (the client has not closed them)."""
        return self._httpd.open_connections

    # -- configuration --------------------------------------------------------
    @property
    def base(self) -> str:
        return f"http://{self.name}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def add(self, path: str, route: Route | str, **kwargs: object) -> None:
        """Add a route: a Page, a callable, or an HTML string (kwargs → Page)."""
        if isinstance(route, str):
            route = Page(route, **kwargs)  # type: ignore[arg-type]
        self.routes[path] = route

    def add_prefix(self, prefix: str, route: Route) -> None:
        """Answer every path starting with ``prefix`` (and no exact route)."""
        self.prefixes.append((prefix, route))

    # -- what was seen --------------------------------------------------------
    def record(self, seen: SeenRequest) -> None:
        with self._lock:
            self.log.append(seen)

    def requested(self, method: str | None = "GET") -> list[str]:
        """Paths requested, in order (robots.txt included)."""
        with self._lock:
            return [r.path for r in self.log if method is None or r.method == method]

    def requested_pages(self) -> list[str]:
        """Paths requested with GET, robots.txt left out."""
        return [p for p in self.requested() if p != "/robots.txt"]

    def clear(self) -> None:
        with self._lock:
            self.log.clear()

    # -- answering --------------------------------------------------------------
    def answer(self, seen: SeenRequest) -> Page | str:
        path = seen.path
        route = self.routes.get(path)
        if route is None:
            route = self.routes.get(urlsplit(path).path)
        if route is None:
            route = next((r for p, r in self.prefixes if path.startswith(p)), None)
        if route is not None:
            return route(seen) if callable(route) else route
        return _builtin(path, self)


def _builtin(path: str, server: TestServer) -> Page | str:
    parts = urlsplit(path)
    query = parse_qs(parts.query)
    if m := re.fullmatch(r"/status/(\d{3})", parts.path):
        code = int(m.group(1))
        return Page(html(f"status {code}", title=f"Status {code}"), status=code)
    if m := re.fullmatch(r"/redirect/(30[12378])", parts.path):
        target = query.get("to", ["/"])[0]
        return Page(b"", status=int(m.group(1)), headers=[("Location", target)])
    if m := re.fullmatch(r"/delay/([\d.]+)", parts.path):
        return Page(html("slow", title="Slow"), delay=float(m.group(1)))
    if parts.path in ("/drop", "/partial"):
        return parts.path  # handled by the handler itself
    if m := re.fullmatch(r"/chain/(\d+)", parts.path):
        i, n = int(m.group(1)), int(query.get("n", ["10"])[0])
        link = f'<a href="/chain/{i + 1}?n={n}">next</a>' if i + 1 < n else "end"
        return Page(html(link, title=f"Chain {i}"))
    return Page(html("not found", title="Not Found"), status=404)


def _make_handler(
    server: TestServer, idle_timeout: float | None
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # a kept-alive connection idle this long is closed (None: never)
        timeout = idle_timeout

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._serve(send_body=True)

        def do_HEAD(self) -> None:
            self._serve(send_body=False)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self._serve(send_body=True)

        def _serve(self, send_body: bool) -> None:
            seen = SeenRequest(
                self.command,
                self.path,
                dict(self.headers.items()),
                time.monotonic(),
                self.client_address[0],
            )
            server.record(seen)
            with server._lock:
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                self._answer(server.answer(seen), send_body)
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _answer(self, page: Page | str, send_body: bool) -> None:
            if page == "/drop":
                self.close_connection = True
                self.connection.close()
                return
            if page == "/partial":
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.write(b"<html>part")
                self.wfile.flush()
                self.close_connection = True
                return
            assert isinstance(page, Page)
            if page.delay:
                time.sleep(page.delay)
            if page.raw is not None:
                self.close_connection = True
                self.wfile.write(page.raw)
                return
            body = page.body_bytes()
            self.send_response(page.status)
            if page.content_type:
                self.send_header("Content-Type", page.content_type)
            names = {name.lower() for name, _ in page.headers}
            for name, value in page.headers:
                self.send_header(name, value)
            if "content-length" not in names:
                length = page.length if page.stream is not None else len(body)
                self.send_header("Content-Length", str(length))
            self.end_headers()
            if not send_body:
                return
            try:
                if page.stream is not None:
                    for chunk in page.stream():
                        self.wfile.write(chunk)
                elif page.trickle:
                    for i in range(len(body)):
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(1 / page.trickle)
                else:
                    self.wfile.write(body)
            except OSError:  # the client gave up
                self.close_connection = True

    return Handler
