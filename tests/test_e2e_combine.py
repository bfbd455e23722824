"""``scrapy combine``: three ``scrapy crawl`` workers sharing the crawl state on
a real redis-server, mirror on, against a local site with broken links, a
duplicate page, a stylesheet and an image; their folders combined and
compared with what one process crawling alone wrote."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import pytest

from tests.support.cli import ROOT, scrapy_env, start_crawl
from tests.support.server import Page
from tests.support.site import Node, Site

if TYPE_CHECKING:
    from tests.support.server import TestServer

PAGES = 60
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


def finished(process: subprocess.Popen[str]) -> None:
    log = process.communicate(timeout=180)[0]
    assert process.returncode == 0, log[-3000:]


def combine_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "combine", *args],
        cwd=ROOT,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


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


def test_three_workers_combined_equal_one_crawl(server, redis_url, tmp_path):
    serve(server)
    out = tmp_path / "out"
    shared = ("-s", f"WEBSPIDER_STATE={redis_url}")
    workers = [crawl(server, out, *shared) for _ in range(3)]
    for worker in workers:
        finished(worker)
    alone = tmp_path / "alone"
    finished(crawl(server, alone))
    combined = tmp_path / "combined"
    result = combine_command(str(out), "-o", str(combined))
    assert result.returncode == 0, result.stderr[-3000:]

    # pages: each URL once, the same URLs as one crawl's
    got = urls(combined / "pages.jsonl")
    assert len(got) == len(set(got))
    assert set(got) == set(urls(alone / "pages.jsonl"))
    assert f"{server.url('/copy-of-4')}" in got
    # the workers did share the work (slow pages: the last to start finds
    # some left), so the combination is more than one worker's file
    shares = [len(urls(out / f"worker-{n}/pages.jsonl")) for n in (1, 2, 3)]
    assert sum(1 for n in shares if n) >= 2, shares

    # one mirror: the same names, and every relative link leads to a file
    mirror = combined / "mirror"
    assert files(mirror) == files(alone / "mirror")
    assert len(files(mirror)) == PAGES + 3
    assert dangling_links(alone / "mirror") == []
    state = (combined / "mirror-state.jsonl").read_text().splitlines()
    assert json.loads(state[0])["mirror_root"] == str(mirror.resolve())

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

    # browsable offline: every relative link leads to a file. Known bug of
    # the shared mirror (not of combine): a worker finishing after the first
    # puts fixed-up pages' links back to pending (the workers' exports of
    # mirror-state.jsonl had 9, 32, 60 pending pages), so a page a worker
    # wrote may keep links that lead where a file was expected before the
    # fix-up ("p/1" for "p/1.html"). Shown as xfail until that is fixed.
    dangling = dangling_links(mirror)
    if dangling:
        pytest.xfail(f"the workers' fix-up left unconverted links: {dangling[:3]}")


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
        result = combine_command(*args)
        assert result.returncode == 2, (expected, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("webspider: error: ")
        assert expected in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk", "out"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["worker-1"]
