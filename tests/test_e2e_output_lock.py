"""Two crawls into one output folder at once: the second is refused.

The lock beside the crawl state kept a second crawl off the state, but with
``-s JOBDIR=`` the state lives elsewhere, and nothing kept a second crawl
off the output folder: started while the first ran (its own JOBDIR, or
none), it replaced pages.jsonl under the first, which ended with exit
status 0 and a third of its pages (328 of 1,172 lines on the PostgreSQL
manual, two of them the other crawl's)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.support.cli import run_crawl, start_crawl
from tests.support.server import Page, SeenRequest, html

PAGES = [f"/p/{i}" for i in range(6)]


@pytest.mark.parametrize("second_jobdir", [True, False])
def test_a_second_crawl_into_a_running_crawls_output_is_refused(
    tmp_path, server, other_server, second_jobdir
):
    links = "".join(f'<a href="{p}">{p}</a>' for p in PAGES)
    for path in PAGES:
        server.add(path, html(path))
    # the first crawl is held at /held until the second is done
    release = threading.Event()

    def held(seen: SeenRequest) -> Page:
        release.wait(60)
        return Page(html("held"))

    server.add("/held", held)
    server.add("/", html(f'{links}<a href="/held">held</a>'))
    other_server.add("/", html("other"))
    out = tmp_path / "out"
    first = start_crawl(
        *("-a", f"start_urls={server.url('/')}", "-a", f"output={out}"),
        *("-s", f"JOBDIR={tmp_path / 'job1'}", "-s", "CONCURRENT_REQUESTS=1"),
    )
    try:
        deadline = time.monotonic() + 60
        while "/held" not in server.requested_pages():
            assert time.monotonic() < deadline, "the first crawl did not start"
            time.sleep(0.05)
        jobdir = ("-s", f"JOBDIR={tmp_path / 'job2'}") if second_jobdir else ()
        second = run_crawl(
            *("-a", f"start_urls={other_server.url('/')}", "-a", f"output={out}"),
            *jobdir,
        )
        release.set()
        log, _ = first.communicate(timeout=120)
    finally:
        release.set()
        first.kill()
    assert second.returncode == 2, second.stderr
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, second.stderr
    assert lines[0].startswith("webspider: error: "), lines[0]
    assert str(out) in lines[0]
    assert "Traceback" not in second.stderr
    assert other_server.requested() == []
    assert first.returncode == 0, log[-2000:]
    urls = [
        json.loads(line)["url"]
        for line in (out / "pages.jsonl").read_text().splitlines()
    ]
    assert sorted(urls) == sorted(server.url(p) for p in ["/", *PAGES, "/held"])
