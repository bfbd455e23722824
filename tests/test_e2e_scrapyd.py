"""Deploy to a real scrapyd and crawl through it, as the README says."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.support.cli import ROOT
from tests.support.server import TestServer, html

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


@pytest.fixture
def scrapyd(tmp_path):
    executable = shutil.which("scrapyd") or str(Path(sys.executable).parent / "scrapyd")
    home = tmp_path / "scrapyd"
    home.mkdir()
    port = free_port()
    (home / "scrapyd.conf").write_text(SCRAPYD_CONF.format(port=port))
    proc = subprocess.Popen(
        [executable], cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: proc.poll() is not None or listening(port), 30, "scrapyd")
        assert proc.poll() is None, "scrapyd exited at start"
        yield port, home
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def deploy(tmp_path: Path, port: int) -> None:
    """Copy the project as a user's checkout and run scrapyd-deploy in it."""
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
