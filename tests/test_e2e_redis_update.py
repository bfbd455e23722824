"""The update crawl of a shared (Redis) crawl: ``scrapy crawl`` workers on a
real redis-server crawl a site with a mirror, finish, and crawl it again.

The second crawl must know every page any worker of the first wrote: each
is asked for with ``If-Modified-Since`` (the server answers 304), none is
fetched whole again, and the workers' ``changes.jsonl`` say ``unchanged``
for every page. Asserted on what the server saw and on the files.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import TYPE_CHECKING

from tests.support.cli import start_crawl
from tests.support.server import Page, SeenRequest, html

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from tests.support.server import TestServer

PAGES = 63  # a binary tree of depth 5
LAST_MODIFIED = "Sat, 01 Jan 2022 00:00:00 GMT"


def path_of(i: int) -> str:
    return "/" if i == 0 else f"/p/{i}"


def joined(out: Path, workers: int, since: float) -> bool:
    """Whether ``workers`` workers have joined the crawl run started at
    ``since``: a worker's scheduler empties (or makes) its folder's
    pages.jsonl once it has opened the run's crawl state. A worker's folder
    lock (taken at the command's start, a second or more before that on a
    loaded machine) was too early: the first worker could finish the crawl
    meanwhile, and the late one started another update crawl (every page
    listed as gone as well as new)."""
    for n in range(1, workers + 1):
        try:
            if (out / f"worker-{n}" / "pages.jsonl").stat().st_mtime < since:
                return False
        except FileNotFoundError:
            return False
    return True


def dated_tree(server: TestServer, out: Path, run: dict[str, float]) -> None:
    """Every page says when it changed, and answers 304 when asked since.

    /p/3 (depth 2) is answered once both workers have joined the run that
    began at ``run["since"]`` (``joined``), and each page takes 0.1 s: in
    each crawl the first worker cannot crawl the whole site before the
    second one joins, however late it starts (a worker starting after a
    crawl finished would start another update crawl)."""
    for i in range(PAGES):
        children = [path_of(c) for c in (2 * i + 1, 2 * i + 2) if c < PAGES]
        body = html("".join(f'<a href="{c}">{c}</a>' for c in children))

        def route(seen: SeenRequest, body: str = body, gate: bool = i == 3) -> Page:
            deadline = time.monotonic() + 60
            while (
                gate
                and not joined(out, 2, run["since"])
                and time.monotonic() < deadline
            ):
                time.sleep(0.01)
            if seen.headers.get("If-Modified-Since") == LAST_MODIFIED:
                return Page(b"", status=304, content_type=None, delay=0.02)
            return Page(body, headers=[("Last-Modified", LAST_MODIFIED)], delay=0.1)

        server.add(path_of(i), route)


def start(server: TestServer, out: Path, state_url: str) -> subprocess.Popen[str]:
    return start_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-s", "CONCURRENT_REQUESTS=4", "-s", "WEBSPIDER_PROGRESS=off"),
        *("-s", "RETRY_TIMES=0", "-s", f"WEBSPIDER_STATE={state_url}"),
    )


def crawl_with(
    server: TestServer,
    out: Path,
    state_url: str,
    workers: int,
    run: dict[str, float],
) -> None:
    # a file's mtime is the kernel's clock, which can lag time.time() by up
    # to a tick: "since" is taken a little early
    run["since"] = time.time() - 0.05
    running = [start(server, out, state_url) for _ in range(workers)]
    for worker in running:
        log = worker.communicate(timeout=180)[0]
        assert worker.returncode == 0, log[-3000:]
        assert "Spider closed (finished)" in log, log[-3000:]


def lines(out: Path, name: str) -> list[dict[str, object]]:
    found = []
    for path in sorted(out.glob(f"worker-*/{name}")):
        found += [json.loads(line) for line in path.read_text().splitlines()]
    return found


def changes(out: Path) -> Counter[tuple[str, str]]:
    """(URL, change) in every worker's changes.jsonl (this run's changes)."""
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted(out.glob("worker-*/changes.jsonl")):
        for line in path.read_text().splitlines():
            data = json.loads(line)
            found[data["url"], data["change"]] += 1
    return found


def test_an_update_crawl_knows_the_pages_of_every_worker(server, redis_url, tmp_path):
    out = tmp_path / "out"
    run = {"since": 0.0}
    dated_tree(server, out, run)
    crawl_with(server, out, redis_url, 2, run)
    fetched = Counter(seen.path for seen in server.log if seen.path != "/robots.txt")
    assert len(fetched) == PAGES
    assert max(fetched.values()) == 1
    # both workers wrote pages (else the test proves nothing)
    written = {
        path.parent.name: len(path.read_text().splitlines())
        for path in out.glob("worker-*/pages.jsonl")
    }
    assert len(written) == 2 and min(written.values()) > 0, written
    urls = {server.url(path_of(i)) for i in range(PAGES)}
    assert changes(out) == Counter((url, "new") for url in urls)

    server.clear()
    crawl_with(server, out, redis_url, 2, run)
    asked = [seen for seen in server.log if seen.path != "/robots.txt"]
    assert Counter(seen.path for seen in asked) == fetched
    # every page asked for since the date the first crawl stored, whichever
    # worker stored it: none downloaded whole again
    whole = sorted(
        seen.path
        for seen in asked
        if seen.headers.get("If-Modified-Since") != LAST_MODIFIED
    )
    assert whole == []
    assert changes(out) == Counter((url, "unchanged") for url in urls)
    # the files stay where the first crawl wrote them: one copy of each page
    files = Counter(
        str(p.relative_to(w / "mirror"))
        for w in out.glob("worker-*/")
        if w.is_dir()
        for p in (w / "mirror").rglob("*")
        if p.is_file()
    )
    assert len(files) == PAGES and max(files.values()) == 1
