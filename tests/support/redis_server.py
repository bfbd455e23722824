"""A real ``redis-server`` for tests: 127.0.0.1, a free port from the OS,
its data in a temporary folder, stopped at the end.

``redis_server`` (session-scoped) is one server for the whole run, flushed
before each test that uses it through ``redis_url``; a test that stops and
restarts Redis (persistence on) starts a ``RedisServer`` of its own.

Tests that need Redis are skipped, with the reason, when ``redis-server`` is
not installed (``.ci/run`` installs it: ``apt-get install redis-server``).

tests/conftest.py registers the fixtures (``pytest_plugins``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server")
SKIP_REASON = "redis-server is not installed (apt-get install redis-server)"


def free_port() -> int:
    """A port the OS says is free now (redis-server needs a concrete one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """``with RedisServer(tmp_path) as srv: srv.url`` — a redis-server process.

    ``appendonly``: persistence on (an fsync'd append-only file, as a user
    who wants nothing lost across a Redis restart runs it); ``stop`` and
    ``start`` again keep the port and the data folder.
    """

    __test__ = False

    def __init__(
        self, directory: Path, *, port: int | None = None, appendonly: bool = False
    ) -> None:
        if REDIS_SERVER is None:
            pytest.skip(SKIP_REASON)
        self.directory = directory
        self.port = port or free_port()
        self.appendonly = appendonly
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        assert REDIS_SERVER is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", "always",
            "--logfile", str(self.directory / "redis.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        end = time.monotonic() + timeout
        while not _ping(self.port):
            if self.process.poll() is not None or time.monotonic() > end:
                self.stop()
                log = self.directory / "redis.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"redis-server did not start on {self.port}: {tail}")
            time.sleep(0.02)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()  # SIGTERM: redis-server writes its AOF and exits
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def flush(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            assert sock.recv(64).startswith(b"+OK")

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session (skipped when not installed)."""
    if REDIS_SERVER is None:
        pytest.skip(SKIP_REASON)
    with RedisServer(tmp_path_factory.mktemp("redis")) as srv:
        yield srv


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis URL, emptied for this test."""
    redis_server.flush()
    return redis_server.url
