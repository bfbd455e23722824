"""``scrapy combine``: three ``scrapy crawl`` workers sharing the crawl state on
a real redis-server, mirror on, against a local site with broken links, a
duplicate page, a stylesheet and an image; their folders combined and
compared with what one process crawling alone wrote."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from tests.support.cli import run_combine, start_crawl
from tests.support.server import Page, SeenRequest
from tests.support.site import Node, Site

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.support.server import TestServer

PAGES = 60
#: the pages whose answers the test holds back (see Gates)
FIRST_GATED = 7
_LINK = re.compile(rb"""(?:href|src)="([^"]*)"|url\(([^)]*)\)""")


def site() -> Site:
    pages = Site()
    for i in range(PAGES):
        path = "/" if i == 0 else f"/p/{i}"
        children = [f"/p/{c}" for c in (2 * i + 1, 2 * i + 2) if c < PAGES]
        broken = [f"/missing/{i % 3}"] if i % 7 == 0 else []
        css = ["/s.css"] if i % 5 == 0 else []
        pages[path] = Node([*children, "/", *broken], requisites=css, delay=0.3)
    pages["/s.css"] = Node(requisites=["/img.png"], content_type="text/css")
    pages["/img.png"] = Node(content_type="image/png")
    pages["/p/9"].links.append("/copy-of-4")
    return pages


def serve(server: TestServer) -> None:
    pages = site()
    pages.serve(server)
    # the same bytes as /p/4: a duplicate
    server.add(
        "/copy-of-4",
        Page(pages["/p/4"].body("/p/4"), content_type="text/html; charset=utf-8"),
    )


def crawl(server: TestServer, out: Path, *extra: str) -> subprocess.Popen[str]:
    return start_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-s", "WEBSPIDER_PROGRESS=off", "-s", "RETRY_TIMES=0"),
        *("-s", "CONCURRENT_REQUESTS=4"),
        *extra,
    )


def finished(process: subprocess.Popen[str], status: int = 0) -> None:
    log = process.communicate(timeout=180)[0]
    assert process.returncode == status, log[-3000:]


def urls(path: Path) -> list[str]:
    return [json.loads(line)["url"] for line in path.read_text().splitlines()]


def files(mirror: Path) -> set[str]:
    return {p.relative_to(mirror).as_posix() for p in mirror.rglob("*") if p.is_file()}


def dangling_links(mirror: Path) -> list[tuple[str, str]]:
    """(file, link) of every relative link in the mirror's HTML and CSS whose
    file is not there."""
    missing = []
    for path in mirror.rglob("*"):
        if path.suffix not in (".html", ".css"):
            continue
        for match in _LINK.finditer(path.read_bytes()):
            link = (match.group(1) or match.group(2)).decode().strip("'\"")
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue  # absolute (not mirrored), or a fragment
            target = (path.parent / unquote(parts.path)).resolve()
            if not target.is_file():
                missing.append((path.relative_to(mirror).as_posix(), link))
    return missing


class Gates:
    """Holds back the answers to the pages from ``/p/FIRST_GATED`` on, one
    gate per User-Agent, until the test opens it: the order in which the
    workers write their pages is the test's, not the scheduler's."""

    def __init__(self, server: TestServer, pages: Site) -> None:
        self.open: dict[str, threading.Event] = {}
        for i in range(FIRST_GATED, PAGES):
            path = f"/p/{i}"
            page = Page(pages[path].body(path), content_type="text/html; charset=utf-8")
            server.add(path, self.route(page))

    def route(self, page: Page) -> Callable[[SeenRequest], Page]:
        def answer(seen: SeenRequest) -> Page:
            agent = seen.headers.get("User-Agent", "")
            gate = self.open.setdefault(agent, threading.Event())
            gate.wait(180)
            return page

        return answer

    def release(self, agent: str) -> None:
        self.open.setdefault(agent, threading.Event()).set()


def wait_for(
    check: Callable[[], bool], what: str, process: subprocess.Popen[str]
) -> None:
    deadline = time.monotonic() + 120
    while not check():
        assert process.poll() is None, (
            f"{what}: the worker ended\n" + (process.communicate()[0][-3000:])
        )
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text().splitlines() if line.endswith("}")]
    except FileNotFoundError:
        return []


def test_three_workers_combined_equal_one_crawl(server, redis_url, tmp_path):
    """The order that left links unconverted, forced: worker 1 writes pages
    alone (their links to pages not fetched yet kept as ``p/7``, the file
    expected); workers 2 and 3 join (an older version emptied the shared
    mirror index then); worker 1 leaves (its fix-up runs, too early for
    the pages the others write next); workers 2 and 3 crawl the rest."""
    serve(server)
    gates = Gates(server, site())
    out = tmp_path / "out"
    shared = ("-s", f"WEBSPIDER_STATE={redis_url}")
    first = crawl(server, out, *shared, "-s", "USER_AGENT=worker-1")
    alone_pages = {server.url("/"), *(server.url(f"/p/{i}") for i in range(1, 7))}
    wait_for(
        lambda: alone_pages <= set(map(_url, lines(out / "worker-1/pages.jsonl"))),
        "worker 1's first pages",
        first,
    )
    others = [crawl(server, out, *shared, "-s", "USER_AGENT=others") for _ in range(2)]
    for n, worker in zip((2, 3), others, strict=True):
        # its mirror has begun (after the shared index was read)
        wait_for(
            lambda n=n: (out / f"worker-{n}/changes.jsonl").exists(),
            f"worker {n} started",
            worker,
        )
    first.send_signal(signal.SIGINT)
    gates.release("worker-1")
    finished(first, 130)  # interrupted: Ctrl-C's status
    gates.release("others")
    for worker in others:
        finished(worker)
    alone = tmp_path / "alone"
    gates.release("alone")
    finished(crawl(server, alone, "-s", "USER_AGENT=alone"))
    combined = tmp_path / "combined"
    result = run_combine(str(out), "-o", str(combined))
    assert result.returncode == 0, result.stderr[-3000:]

    # pages: each URL once, the same URLs as one crawl's
    got = urls(combined / "pages.jsonl")
    assert len(got) == len(set(got))
    assert set(got) == set(urls(alone / "pages.jsonl"))
    assert f"{server.url('/copy-of-4')}" in got
    shares = [len(urls(out / f"worker-{n}/pages.jsonl")) for n in (1, 2, 3)]
    assert shares[0] and shares[1] + shares[2], shares

    # one mirror: the same names, and every relative link leads to a file,
    # those of worker 1's pages to files the others wrote after it left
    mirror = combined / "mirror"
    assert files(mirror) == files(alone / "mirror")
    assert len(files(mirror)) == PAGES + 3
    assert dangling_links(alone / "mirror") == []
    assert dangling_links(mirror) == []
    # the links are those of one process's crawl, byte for byte
    for name in sorted(files(mirror)):
        assert (mirror / name).read_bytes() == (alone / "mirror" / name).read_bytes(), (
            name
        )
    state = (combined / "mirror-state.jsonl").read_text().splitlines()
    assert json.loads(state[0])["mirror_root"] == str(mirror.resolve())
    # the order was the one forced: worker 1 left with links of its pages
    # still as written, which the combination fixed
    first_mirror = out / "worker-1/mirror"
    assert any(
        path.read_bytes() != (mirror / name).read_bytes()
        for name, path in ((n, first_mirror / n) for n in files(first_mirror))
    )

    # the reports: the same broken URLs and counts as one crawl's
    def broken(folder: Path) -> dict[str, int]:
        lines = (folder / "broken-links.jsonl").read_text().splitlines()
        return {
            r["url"]: len(r["referrers"]) for r in (json.loads(line) for line in lines)
        }

    assert broken(combined) == broken(alone)
    assert len(broken(alone)) == 3
    mine = json.loads((combined / "summary.json").read_text())
    theirs = json.loads((alone / "summary.json").read_text())
    for key in ("pages", "urls_seen", "links", "requests", "broken", "duplicates"):
        assert mine[key] == theirs[key], key
    assert mine["duplicates"]["total"] == 1
    assert mine["finish_reason"] == "finished"
    report = (combined / "report.html").read_text()
    assert server.url("/missing/0") in report
    assert server.url("/copy-of-4") in report


def _url(line: str) -> str:
    return str(json.loads(line)["url"])


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    real = tmp_path / "out" / "worker-1"
    real.mkdir(parents=True)
    (real / "pages.jsonl").write_text('{"url": "http://s.test/"}\n')
    (tmp_path / "junk").mkdir()
    cases = {
        "no such folder": [str(tmp_path / "nowhere"), "-o", str(tmp_path / "c1")],
        "not a webspider output": [str(tmp_path / "junk"), "-o", str(tmp_path / "c2")],
        "overlap": [str(tmp_path / "out"), "-o", str(tmp_path / "out" / "combined")],
    }
    for expected, args in cases.items():
        result = run_combine(*args)
        assert result.returncode == 2, (expected, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("webspider: error: ")
        assert expected in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk", "out"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["worker-1"]
