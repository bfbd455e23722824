"""Deploy to a real scrapyd and crawl through it, as the README says."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.cli import ROOT
from tests.support.server import Page, SeenRequest, TestServer, html

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.e2e

SCRAPYD_CONF = """\
[scrapyd]
bind_address = 127.0.0.1
http_port = {port}
eggs_dir = eggs
logs_dir = logs
items_dir = items
dbs_dir = dbs
max_proc = 1
poll_interval = 0.2
"""


def free_port() -> int:
    # scrapyd cannot listen on port 0, so ask the OS for a free port first.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def api(port: int, endpoint: str, **params: str) -> dict:
    url = f"http://127.0.0.1:{port}/{endpoint}"
    if endpoint == "schedule.json":
        data = urllib.parse.urlencode(params).encode()
        request = urllib.request.Request(url, data=data)
    else:
        request = urllib.request.Request(f"{url}?{urllib.parse.urlencode(params)}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


@contextlib.contextmanager
def running_scrapyd(home: Path) -> Iterator[int]:
    """A scrapyd in ``home`` (its eggs, logs, items, dbs there); its port."""
    executable = shutil.which("scrapyd") or str(Path(sys.executable).parent / "scrapyd")
    home.mkdir(parents=True)
    port = free_port()
    (home / "scrapyd.conf").write_text(SCRAPYD_CONF.format(port=port))
    proc = subprocess.Popen(
        [executable], cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: proc.poll() is not None or listening(port), 30, "scrapyd")
        assert proc.poll() is None, "scrapyd exited at start"
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def scrapyd(tmp_path):
    home = tmp_path / "scrapyd"
    with running_scrapyd(home) as port:
        yield port, home


def deploy(tmp_path: Path, port: int) -> None:
    """Copy the project as a user's checkout (in ``tmp_path/project``) and
    run scrapyd-deploy in it."""
    project = tmp_path / "project"
    shutil.copytree(
        ROOT / "webspider",
        project / "webspider",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    cfg = (ROOT / "scrapy.cfg").read_text()
    cfg = cfg.replace("http://127.0.0.1:6800/", f"http://127.0.0.1:{port}/")
    (project / "scrapy.cfg").write_text(cfg)
    executable = shutil.which("scrapyd-deploy") or str(
        Path(sys.executable).parent / "scrapyd-deploy"
    )
    proc = subprocess.run(
        [executable],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"status": "ok"' in proc.stdout + proc.stderr


def test_deploy_and_crawl_with_scrapyd(tmp_path, scrapyd):
    port, home = scrapyd
    with TestServer() as site:  # 127.0.0.1: the egg has no test resolver
        site.add("/", html('<a href="/a">a</a> <a href="/b">b</a>', "Home"))
        site.add("/a", html('<a href="/b">b</a>', "A"))
        site.add("/b", html("leaf", "B"))
        deploy(tmp_path, port)
        job = api(
            port,
            "schedule.json",
            project="webspider",
            spider="webspider",
            start_urls=site.url("/"),
            scope="host",
        )
        assert job["status"] == "ok", job
        jobid = job["jobid"]

        def finished():
            jobs = api(port, "listjobs.json", project="webspider")
            return any(j["id"] == jobid for j in jobs["finished"])

        wait_until(finished, 90, "the scrapyd job to finish")
        assert sorted(site.requested()) == ["/", "/a", "/b", "/robots.txt"]
    items_file = home / "items" / "webspider" / "webspider" / f"{jobid}.jl"
    items = [json.loads(line) for line in items_file.read_text().splitlines()]
    assert sorted((i["url"], i["depth"]) for i in items) == [
        (site.url("/"), 0),
        (site.url("/a"), 1),
        (site.url("/b"), 1),
    ]


def schedule(port: int, *settings: str, **arguments: str) -> str:
    """schedule.json with spider arguments and ``NAME=VALUE`` settings (the
    ``setting`` parameter, once each); the job's id."""
    data = urllib.parse.urlencode(
        [
            ("project", "webspider"),
            ("spider", "webspider"),
            *arguments.items(),
            *(("setting", s) for s in settings),
        ]
    ).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/schedule.json", data)
    with urllib.request.urlopen(request, timeout=10) as response:
        job = json.load(response)
    assert job["status"] == "ok", job
    return str(job["jobid"])


def job_log(home: Path, jobid: str) -> str:
    path = home / "logs" / "webspider" / "webspider" / f"{jobid}.log"
    return path.read_text() if path.exists() else ""


def test_two_scrapyd_instances_share_one_crawl_on_redis(tmp_path, redis_url):
    """Deploy once to each of two scrapyd instances and schedule the spider
    on both with one WEBSPIDER_STATE: one crawl — robots.txt fetched once,
    every page once at the server and once in the two jobs' items together,
    both jobs finished."""
    homes = [tmp_path / "scrapyd-a", tmp_path / "scrapyd-b"]
    jobs: list[str] = []
    with (
        running_scrapyd(homes[0]) as port_a,
        running_scrapyd(homes[1]) as port_b,
        TestServer() as site,  # 127.0.0.1: the egg has no test resolver
    ):
        # "/" links to 40 pages, /p/1 to 20 more. /p/1 is answered once the
        # second job has opened the crawl (its log says so): the first job
        # cannot finish the crawl alone, however late the second starts (one
        # starting after the crawl finished would start an update crawl).
        def gated(seen: SeenRequest) -> Page:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and len(jobs) < 2:
                time.sleep(0.05)
            while time.monotonic() < deadline and "Spider opened" not in job_log(
                homes[1], jobs[1]
            ):
                time.sleep(0.05)
            links = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(41, 61))
            return Page(html(links, "One"), delay=0.1)

        site.add("/", html("".join(f'<a href="/p/{i}">{i}</a>' for i in range(1, 41))))
        site.add("/p/1", gated)
        for i in range(2, 61):
            site.add(f"/p/{i}", Page(html('<a href="/">home</a>', f"P{i}"), delay=0.1))
        for port, home in zip((port_a, port_b), homes, strict=True):
            deploy(home, port)
        for port, home in zip((port_a, port_b), homes, strict=True):
            jobs.append(
                schedule(
                    port,
                    f"WEBSPIDER_STATE={redis_url}",
                    # no job holds more requests than it has in flight, so
                    # the second takes its share once it joins
                    "CONCURRENT_REQUESTS=2",
                    "WEBSPIDER_MAX_WAITING_REQUESTS=0",
                    start_urls=site.url("/"),
                    scope="host",
                    mirror="0",
                    output=str(home / "out"),
                )
            )

        def finished() -> bool:
            return all(
                any(
                    j["id"] == job
                    for j in api(port, "listjobs.json", project="webspider")["finished"]
                )
                for port, job in zip((port_a, port_b), jobs, strict=True)
            )

        wait_until(finished, 150, "both scrapyd jobs to finish")
        served = site.requested()
    pages = {"/", *(f"/p/{i}" for i in range(1, 61))}
    assert served.count("/robots.txt") == 1, served
    assert sorted(p for p in served if p != "/robots.txt") == sorted(pages)
    items = []
    for home, job in zip(homes, jobs, strict=True):
        log = job_log(home, job)
        assert "'finish_reason': 'finished'" in log, log[-3000:]
        feed = home / "items" / "webspider" / "webspider" / f"{job}.jl"
        items.append(
            [json.loads(line)["url"] for line in feed.read_text().splitlines()]
        )
    assert sorted(items[0] + items[1]) == sorted(site.url(p) for p in pages)
    assert items[0] and items[1], "one job crawled alone: the test shows nothing"
