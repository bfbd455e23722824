"""The sites the benchmark crawls, each served on 127.0.0.1 at a free port.

* ``docs``: Debian's python3.11-doc HTML (about 530 pages, 1,000 files), served
  by nginx.
* ``pgdocs``: Debian's postgresql-doc-15 HTML (about 1,170 pages), served by
  nginx (opt-in: ``--sites pgdocs``).
* ``synthetic``: a generated link-heavy site (N pages, L links each), written
  once to a cache directory and served by nginx, so the server is never the
  bottleneck.
* ``latency``: the docs site behind bench/latency_proxy.py, which holds every
  response back by 50 ms (concurrency matters there).
* ``onepage``: one page, so what is measured is the crawler's fixed cost of
  starting and stopping (opt-in: ``--sites onepage``).

Every site is a context manager yielding a :class:`Site`; ``site.requests()``
returns the requests the origin server logged since the last ``mark()``, so a
contender's result can be checked against what the server actually served.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS_ROOT = Path("/usr/share/doc/python3.11/html")
PGDOCS_ROOT = Path("/usr/share/doc/postgresql-doc-15/html")
NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx")

_NGINX_CONF = """\
daemon off;
master_process off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    include {mime_types};
    default_type application/octet-stream;
    log_format bench '$request_method $request_uri $status $body_bytes_sent $msec';
    access_log {tmp}/access.log bench;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        root {root};
        index index.html;
    }}
}}
"""


class SiteUnavailable(RuntimeError):
    """A site cannot be served here; the message says what to install."""


@dataclass(frozen=True)
class Served:
    """One request as the origin server logged it."""

    method: str
    path: str
    status: int
    #: when the response was sent (seconds since the epoch)
    at: float = 0.0


@dataclass
class Site:
    name: str
    url: str
    description: str
    #: requests the origin logged since the last mark()
    _read_log: Callable[[], list[Served]] = field(repr=False)
    _mark: Callable[[], None] = field(repr=False)

    def mark(self) -> None:
        self._mark()

    def requests(self) -> list[Served]:
        return self._read_log()


def free_port() -> int:
    """A port the OS says is free now (the server binds it right after)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(
    port: int, proc: subprocess.Popen[bytes], timeout: float = 10
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode}")
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=0.5),
        ):
            return
        time.sleep(0.02)
    raise RuntimeError(f"server did not listen on port {port} within {timeout}s")


def find_nginx() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    return next((p for p in NGINX_CANDIDATES if os.access(p, os.X_OK)), None)


class _AccessLog:
    """Reads the lines nginx appended to its access log since mark()."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def read(self) -> list[Served]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        out = []
        for line in data.decode("latin-1").splitlines():
            # "$request_method $request_uri $status $body_bytes_sent $msec"
            head, _, tail = line.partition(" ")
            path, status, _size, at = ([*tail.rsplit(" ", 3), "", "", ""])[:4]
            if status.isdigit():
                out.append(Served(head, path, int(status), float(at or 0)))
        return out


@contextlib.contextmanager
def static_server(
    root: Path, port: int | None = None
) -> Iterator[tuple[int, _AccessLog]]:
    """Serve ``root`` on 127.0.0.1:<free port> (or on ``port``): nginx, or
    Python's http.server (much slower: it may become the bottleneck) without
    it."""
    fixed = port
    with tempfile.TemporaryDirectory(prefix="webspider-bench-nginx-") as tmp:
        log = _AccessLog(Path(tmp) / "access.log")
        nginx = find_nginx()
        for _attempt in range(1 if fixed else 5):
            port = fixed or free_port()
            if nginx:
                conf = Path(tmp) / "nginx.conf"
                conf.write_text(
                    _NGINX_CONF.format(
                        tmp=tmp,
                        port=port,
                        root=root,
                        mime_types=_mime_types(),
                    )
                )
                argv = [nginx, "-p", tmp, "-e", f"{tmp}/error.log", "-c", str(conf)]
            else:
                print(
                    "bench: nginx not found (apt-get install nginx-light); "
                    "using python -m http.server, which may be the bottleneck",
                    file=sys.stderr,
                )
                argv = [
                    sys.executable,
                    str(HERE / "static_server.py"),
                    str(root),
                    str(port),
                    str(log.path),
                ]
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
            try:
                wait_for_port(port, proc)
            except RuntimeError:
                proc.kill()
                proc.wait()
                continue  # the port was taken in between: pick another
            try:
                yield port, log
            finally:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            return
        raise RuntimeError(f"could not start a static server for {root}")


def _mime_types() -> str:
    for candidate in ("/etc/nginx/mime.types", "/usr/local/etc/nginx/mime.types"):
        if os.path.exists(candidate):
            return candidate
    path = Path(tempfile.gettempdir()) / "webspider-bench-mime.types"
    path.write_text(
        "types { text/html html htm; text/css css; "
        "application/javascript js; image/png png; }\n"
    )
    return str(path)


def docs_root() -> Path:
    if not (DOCS_ROOT / "index.html").exists():
        raise SiteUnavailable(f"{DOCS_ROOT} not found: apt-get install python3.11-doc")
    return DOCS_ROOT


@contextlib.contextmanager
def docs_site() -> Iterator[Site]:
    with static_server(docs_root()) as (port, log):
        yield Site(
            "docs",
            f"http://127.0.0.1:{port}/",
            "python3.11-doc served by nginx",
            log.read,
            log.mark,
        )


@contextlib.contextmanager
def pgdocs_site() -> Iterator[Site]:
    """PostgreSQL 15's HTML documentation (about 1,170 pages, flat)."""
    if not (PGDOCS_ROOT / "index.html").exists():
        raise SiteUnavailable(
            f"{PGDOCS_ROOT} not found: apt-get install postgresql-doc-15"
        )
    with static_server(PGDOCS_ROOT) as (port, log):
        yield Site(
            "pgdocs",
            f"http://127.0.0.1:{port}/",
            "postgresql-doc-15 served by nginx",
            log.read,
            log.mark,
        )


_ONE_PAGE = """\
<!doctype html>
<html><head><title>One page</title></head>
<body><p>One page, <a href="index.html">linking to itself</a>.</p></body></html>
"""


@contextlib.contextmanager
def one_page_site() -> Iterator[Site]:
    """What starting and stopping costs: one page (and robots.txt's 404)."""
    with tempfile.TemporaryDirectory(prefix="webspider-bench-onepage-") as tmp:
        root = Path(tmp)
        (root / "index.html").write_text(_ONE_PAGE)
        with static_server(root) as (port, log):
            yield Site(
                "onepage",
                f"http://127.0.0.1:{port}/",
                "one HTML page served by nginx (start-up and shut-down cost)",
                log.read,
                log.mark,
            )


@contextlib.contextmanager
def latency_site(
    delay: float = 0.05,
    timings: Path | None = None,
    root: Path | None = None,
    about: str = "python3.11-doc",
) -> Iterator[Site]:
    """``root`` (python3.11-doc by default; ``about`` names it) served by
    nginx behind bench/latency_proxy.py, which holds every response back by
    ``delay`` seconds. ``timings``: a file the proxy appends each request's
    received and sent times to (``--log``)."""
    logging = ["--log", str(timings)] if timings is not None else []
    with static_server(root or docs_root()) as (upstream, log):
        for _attempt in range(5):
            port = free_port()
            proc = subprocess.Popen(
                [
                    sys.executable,
                    str(HERE / "latency_proxy.py"),
                    "--port",
                    str(port),
                    "--upstream",
                    str(upstream),
                    "--delay",
                    str(delay),
                    *logging,
                ],
            )
            try:
                wait_for_port(port, proc)
            except RuntimeError:
                proc.kill()
                proc.wait()
                continue
            try:
                yield Site(
                    "latency",
                    f"http://127.0.0.1:{port}/",
                    f"{about} behind a proxy adding {delay * 1000:.0f} ms "
                    "to every response",
                    log.read,
                    log.mark,
                )
            finally:
                proc.terminate()
                proc.wait()
            return
        raise RuntimeError("could not start the latency proxy")


def generate_synthetic(pages: int, links: int) -> Path:
    """Write (once, cached) a site of ``pages`` pages with ``links`` links each.

    Page i links to i+1 (so every page is reachable) and to pages spread
    evenly over the whole site; half the links are root-relative, half
    relative to the page, so URL joining is exercised as on real sites."""
    root = Path(tempfile.gettempdir()) / f"webspider-bench-synthetic-{pages}x{links}"
    done = root / ".complete"
    if done.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    (root / "p").mkdir(parents=True)
    step = max(1, pages // links)
    (root / "index.html").write_text(
        "<!DOCTYPE html><html><head><title>Synthetic</title></head><body>"
        '<a href="p/0.html">start</a></body></html>\n'
    )
    for i in range(pages):
        parts = [
            f'<!DOCTYPE html><html><head><meta charset="utf-8">'
            f"<title>Page {i}</title></head><body><h1>Page {i}</h1><ul>\n"
        ]
        for j in range(links):
            k = (i + 1 + j * step) % pages
            href = f"/p/{k}.html" if j % 2 else f"{k}.html"
            parts.append(f'<li><a href="{href}">page {k}</a></li>\n')
        parts.append("</ul></body></html>\n")
        (root / "p" / f"{i}.html").write_text("".join(parts))
    done.write_text("ok\n")
    return root


@contextlib.contextmanager
def synthetic_site(pages: int = 20_000, links: int = 200) -> Iterator[Site]:
    root = generate_synthetic(pages, links)
    with static_server(root) as (port, log):
        yield Site(
            "synthetic",
            f"http://127.0.0.1:{port}/",
            f"{pages:,} generated pages x {links} links, served by nginx",
            log.read,
            log.mark,
        )
