"""A crawl state found damaged while the crawl runs stops it in one line.

``scrapy crawl`` subprocesses against a loopback site whose server holds
some requests, so that the crawl is mid-way (and, its transaction
committed, quiet) when the test damages its real state file: B-tree pages
overwritten with garbage (SQLite's "database disk image is malformed"), or
a ``waiting_text`` row deleted through sqlite3 while the crawl is stopped
with SIGSTOP (a waiting link then names a text that is not there: a
StateError). Each must end with exit status 5, exactly one line on stderr
naming the state file and what to do, no traceback anywhere, the state not
marked finished; the same command again must be refused before it starts
(exit 2), and ``-a restart=1`` must then crawl the whole site.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from typing import TYPE_CHECKING, Any

import redis
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.cli import scrapy_command, start_apart
from tests.support.crawl import install_test_resolver, make_settings
from tests.support.server import Page, SeenRequest, TestServer, html
from webspider.commands.crawl import EXIT_STATE_DAMAGED, EXIT_USAGE
from webspider.frontier.state import StateError
from webspider.spiders.webspider import WebSpider
from webspider.storage import crawl_stop

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from scrapy.http import Response

STATE = ".webspider-state.sqlite3"
ADVICE = "start over with -a restart=1, or restore the file from a copy"
#: a text of 3 characters or more met twice is kept once in waiting_text
MISSING_TEXT = "a page that is missing"


class Held:
    """Holds the requests for the paths ``held`` answers True for until
    ``release``; counts them."""

    def __init__(self, server: TestServer, held: Callable[[str], bool]) -> None:
        self.gate = threading.Event()
        self.count = 0
        self._lock = threading.Lock()
        for path, route in list(server.routes.items()):
            if isinstance(route, Page) and held(path):
                server.routes[path] = self._route(route)

    def _route(self, page: Page) -> Callable[[SeenRequest], Page]:
        def answer(_seen: SeenRequest) -> Page:
            with self._lock:
                self.count += 1
            self.gate.wait(120)
            return page

        return answer

    def release(self) -> None:
        self.gate.set()


def serve_tree(server: TestServer, pages: int) -> None:
    """A binary tree of ``pages`` pages, each linking one of three missing
    pages (with the same text: a waiting link's text kept once)."""
    for i in range(pages):
        path = "/" if i == 0 else f"/p/{i}"
        links = [f"/p/{c}" for c in (2 * i + 1, 2 * i + 2) if c < pages]
        body = "".join(f'<a href="{u}">next page</a>' for u in links)
        body += f'<a href="/missing/{i % 3}">{MISSING_TEXT}</a>'
        server.add(path, Page(html(body, title=f"page {i}")))
    for j in range(3):
        server.add(f"/missing/{j}", Page(html("gone", title="Gone"), status=404))


def args(server: TestServer, out: Path, *extra: str) -> list[str]:
    return [
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-s", "CONCURRENT_REQUESTS=4", "-s", "WEBSPIDER_PROGRESS=off"),
        *("-s", "RETRY_TIMES=0", "-s", "LOG_LEVEL=INFO"),
        # the log in a file: stderr holds only what the command prints
        *("-s", f"LOG_FILE={out.parent / (out.name + '.log')}"),
        *extra,
    ]


def start(server: TestServer, out: Path, *extra: str) -> subprocess.Popen[str]:
    return start_apart(scrapy_command(*args(server, out, *extra)))


def run(server: TestServer, out: Path, *extra: str) -> tuple[int, str, str]:
    """The crawl to its end: exit status, stderr, log."""
    crawl = start(server, out, *extra)
    _, stderr = crawl.communicate(timeout=180)
    return crawl.returncode, stderr, log_of(out)


def log_of(out: Path) -> str:
    path = out.parent / (out.name + ".log")
    return path.read_text("utf-8") if path.exists() else ""


def urls(out: Path) -> set[str]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return {json.loads(line)["url"] for line in lines}  # every line valid JSON


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.05)


def stopped_quiet(
    crawl: subprocess.Popen[str],
    state: Path,
    ready: Callable[[sqlite3.Connection], bool] = lambda _db: True,
) -> sqlite3.Connection:
    """The crawl stopped (SIGSTOP) between two of its transactions: a
    connection to its state holding the write lock, on which ``ready``
    succeeded. The crawl commits at least once a second while it asks for
    requests (the held page leaves it asking), and writes nothing more
    while the server holds its pages."""
    deadline = time.monotonic() + 60
    while True:
        os.kill(crawl.pid, signal.SIGSTOP)
        db = sqlite3.connect(state, timeout=0, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            if ready(db):
                return db
        except sqlite3.OperationalError:  # its transaction is open
            pass
        db.close()
        os.kill(crawl.pid, signal.SIGCONT)
        assert time.monotonic() < deadline, "the crawl never committed"
        time.sleep(0.3)


def assert_stopped_damaged(status: int, stderr: str, log: str, out: Path) -> None:
    assert status == EXIT_STATE_DAMAGED == 5, stderr + log
    assert "Traceback" not in stderr + log, stderr + log
    assert stderr.count("\n") == 1, stderr
    line = stderr.rstrip("\n")
    prefix = f"webspider: damaged crawl state {out / STATE}: "
    assert line.startswith(prefix), line
    assert line.endswith(
        f"; the crawl is not finished and cannot be continued: {ADVICE}"
    ), line
    assert log.count("Stopping the crawl: damaged crawl state ") == 1, log
    assert "Spider closed (state_damaged)" in log, log
    assert "(finished)" not in log, log


def assert_refused_then_restarted(
    server: TestServer, out: Path, expected: set[str], pages: int
) -> None:
    # the same command: refused before it starts, in one line
    server.clear()
    status, stderr, _ = run(server, out)
    assert status == EXIT_USAGE, stderr
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith(f"webspider: error: {out / STATE}: damaged crawl state"), (
        stderr
    )
    assert "-a restart=1" in stderr, stderr
    assert "Traceback" not in stderr
    assert server.requested_pages() == []
    # starting over crawls the whole site
    status, stderr, log = run(server, out, "-a", "restart=1")
    assert status == 0, stderr + log
    assert "Traceback" not in stderr + log
    assert "Spider closed (finished)" in log, log
    assert urls(out) == expected
    seen = set(server.requested_pages())
    assert {"/", *(f"/p/{i}" for i in range(1, pages))} <= seen
    assert {f"/missing/{j}" for j in range(3)} <= seen
    assert not (out / (STATE + ".damaged")).exists()


def reference(server: TestServer, tmp_path: Path) -> set[str]:
    status, stderr, log = run(server, tmp_path / "reference")
    assert status == 0, stderr + log
    return urls(tmp_path / "reference")


def test_garbage_written_over_the_state_file_stops_the_crawl(tmp_path, server):
    pages = 60
    serve_tree(server, pages)
    expected = reference(server, tmp_path)
    assert len(expected) == pages  # the missing pages are not in it
    # depth 4 is pages 15-30: one held, the level waits for it
    held = Held(server, lambda path: path == "/p/20")
    out = tmp_path / "out"
    state = out / STATE
    crawl = start(server, out)
    try:
        wait_for(lambda: held.count == 1, "the held page")

        def checkpointed(db: sqlite3.Connection) -> bool:
            # the crawl's connection drops the pages it holds in memory at
            # its next transaction (the log changed), and finds them all in
            # the file (none in the log: a read it keeps open holds them)
            db.execute("PRAGMA user_version = 7")
            db.execute("COMMIT")
            return db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0

        db = stopped_quiet(crawl, state, checkpointed)
        (page_size,) = db.execute("PRAGMA page_size").fetchone()
        db.close()
        size = state.stat().st_size
        assert size > 4 * page_size
        with state.open("r+b") as f:  # every page but the first (the header)
            f.seek(page_size)
            f.write(bytes((i * 37 + 11) % 256 for i in range(size - page_size)))
    finally:
        os.kill(crawl.pid, signal.SIGCONT)
        held.release()
    _, stderr = crawl.communicate(timeout=120)
    log = log_of(out)
    assert_stopped_damaged(crawl.returncode, stderr, log, out)
    assert "malformed" in stderr or "not a database" in stderr, stderr
    assert (out / (STATE + ".damaged")).exists()
    assert_refused_then_restarted(server, out, expected, pages)


def waiting_texts(state: Path) -> int:
    db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT count(*) FROM waiting_text").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        db.close()


def test_a_waiting_text_deleted_mid_crawl_stops_the_crawl(tmp_path, server):
    pages = 30
    serve_tree(server, pages)
    expected = reference(server, tmp_path)
    server.clear()
    held = Held(server, lambda path: path.startswith("/missing/"))
    out = tmp_path / "out"
    state = out / STATE
    # a first crawl, killed once the texts of its waiting links are
    # committed (the missing pages held): the next one reads them from the
    # file, not from its memory
    first = start(server, out)
    try:
        wait_for(lambda: state.exists() and waiting_texts(state) > 0, "a text")
    finally:
        first.kill()
        first.communicate(timeout=60)
    asked = held.count
    crawl = start(server, out)
    try:
        wait_for(lambda: held.count > asked, "the resumed crawl's held pages")
        db = stopped_quiet(crawl, state)
        assert db.execute("DELETE FROM waiting_text").rowcount > 0
        db.execute("COMMIT")
        db.close()
    finally:
        os.kill(crawl.pid, signal.SIGCONT)
        held.release()
    _, stderr = crawl.communicate(timeout=120)
    log = log_of(out)
    assert_stopped_damaged(crawl.returncode, stderr, log, out)
    assert "a waiting link names text " in stderr, stderr
    # nothing committed after it: not finished
    db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
    try:
        finished = db.execute("SELECT value FROM meta WHERE name = 'finished'")
        assert finished.fetchone() is None
    finally:
        db.close()
    assert_refused_then_restarted(server, out, expected, pages)


def test_a_redis_state_whose_keys_were_deleted_stops_the_worker(
    tmp_path, server, redis_url
):
    # Redis stays up: no reconnection checks the state, its commit does
    pages = 60
    serve_tree(server, pages)
    expected = reference(server, tmp_path)
    server.clear()
    held = Held(server, lambda path: path == "/p/20")
    out = tmp_path / "out"
    shared = ("-s", f"WEBSPIDER_STATE={redis_url}", "-s", "WEBSPIDER_STATE_KEY=c")
    crawl = start(server, out, *shared)
    try:
        wait_for(lambda: held.count == 1, "the held page")
        redis.Redis.from_url(redis_url).flushdb()
    finally:
        held.release()
    _, stderr = crawl.communicate(timeout=120)
    log = log_of(out)
    where = f"{redis_url} (crawl c)"
    assert crawl.returncode == EXIT_STATE_DAMAGED, stderr + log
    assert "Traceback" not in stderr + log, stderr + log
    assert stderr == (
        f"webspider: damaged crawl state {where}: the crawl state is gone (Redis "
        "restarted without persistence, or the keys were deleted); the crawl is "
        f"not finished and cannot be continued: {ADVICE}\n"
    )
    # never marked finished (the next run would take it for an update crawl)
    assert (
        redis.Redis.from_url(redis_url).hget("webspider:{c}:meta", "finished") is None
    )
    # the same command is refused; starting over crawls the whole site
    server.clear()
    status, stderr, _ = run(server, out, *shared)
    assert status == EXIT_USAGE, stderr
    assert stderr.startswith(f"webspider: error: {where}: damaged crawl state"), stderr
    assert server.requested_pages() == []
    status, stderr, log = run(server, out, *shared, "-a", "restart=1")
    assert status == 0, stderr + log
    assert "Spider closed (finished)" in log, log
    got = {
        json.loads(line)["url"]
        for path in out.glob("worker-*/pages.jsonl")
        for line in path.read_text("utf-8").splitlines()
    }
    assert got == expected


class _ReadsDamage(WebSpider):
    """A spider whose callback meets the damaged state on one page (as code
    of yours reading the crawl's records would): Scrapy catches that error
    and logs it with its traceback ("Spider error processing") before any
    of webspider's code sees it."""

    name = "reads-damage"

    def parse(self, response: Response, **kwargs: Any) -> Any:
        if response.url.endswith("/p/3"):
            raise StateError(f"{self.settings['WEBSPIDER_OUTPUT']}/x: a row is missing")
        return super().parse(response, **kwargs)


@deferred_f_from_coro_f
async def test_an_error_scrapy_logs_itself_stops_the_crawl_too(
    tmp_path, server, caplog
):
    serve_tree(server, 30)
    crawler = Crawler(_ReadsDamage, make_settings(tmp_path / "out"))
    install_test_resolver(crawler)
    await crawler.crawl_async(start_urls=server.url("/"))
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "state_damaged"
    assert stats["webspider/storage/damaged_state_error_count"] == 1
    stop = crawl_stop(crawler)
    assert stop is not None and stop.damaged
    assert stop.error == f"{tmp_path / 'out'}/x: a row is missing"
    assert "Traceback" not in caplog.text
    assert "Spider error processing" not in caplog.text
    assert caplog.text.count("Stopping the crawl: damaged crawl state ") == 1
    assert (tmp_path / "out" / (STATE + ".damaged")).exists()
    # not marked finished, and not a page more asked for than the stop left
    db = sqlite3.connect(tmp_path / "out" / STATE)
    try:
        assert (
            db.execute("SELECT 1 FROM meta WHERE name = 'finished'").fetchone() is None
        )
    finally:
        db.close()
    assert len(server.requested_pages()) < 30
