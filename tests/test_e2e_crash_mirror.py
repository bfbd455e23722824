"""Kill a mirroring crawl at any moment, run the same command again: the same
mirror as an uninterrupted crawl's, every file byte for byte.

``scrapy crawl`` subprocesses (mirror on, the page worker on) against a
generated site whose pages link each other in every way the mirror
converts: root-relative links to pages without an extension (their files get
``.html``, so the links are re-pointed by the fix-up), absolute links to
pages mirrored later (left absolute, fixed up at the end), a stylesheet with
an image, a redirect and broken links. Killed with SIGKILL while pages are
being written, and during the end-of-crawl fix-up; then run again until a
run finishes. The mirror is compared with the one an uninterrupted crawl
made of the same server.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.cli import start_crawl
from tests.support.hold import mirror_record_committed
from tests.support.server import Page
from tests.support.site import Node, Site
from webspider.settings import DOWNLOADER_MIDDLEWARES

if TYPE_CHECKING:
    from tests.support.server import TestServer

STATE = ".webspider-state.sqlite3"


def site(server: TestServer, pages: int, delay: float = 0.005) -> Site:
    """``pages`` pages: a binary tree by root-relative links, each page also
    linking two others absolutely (most of them not mirrored yet when it is
    written), a broken link and, every tenth, a redirect (to a page linked
    from nowhere else: which way a page is first reached depends on timing)."""
    out = Site()
    for i in range(pages):
        path = "/" if i == 0 else f"/p/{i}"
        links = [f"/p/{c}" for c in (2 * i + 1, 2 * i + 2) if c < pages]
        links += [server.url(f"/p/{(i * k) % pages or 1}") for k in (7, 13)]
        links.append(f"/missing/{i % 5}")
        if i % 10 == 0:
            links.append("/redirect/301?to=/r")
        out[path] = Node(links, requisites=["/style.css"], delay=delay)
    out["/r"] = Node(["/"])
    out["/style.css"] = Node(requisites=["/img.png"], content_type="text/css")
    out.serve(server)
    server.add("/img.png", Page(b"\x89PNG image", content_type="image/png"))
    return out


def start(server: TestServer, out: Path, *extra: str) -> subprocess.Popen[str]:
    return start_crawl(
        *("-a", f"url={server.url('/')}", "-a", f"output={out}"),
        *("-s", "CONCURRENT_REQUESTS=4", "-s", "WEBSPIDER_PROGRESS=off"),
        *("-s", "RETRY_TIMES=0", "-s", "LOG_LEVEL=INFO"),
        *extra,
    )


def killed_after_mirror(server: TestServer, out: Path, path: str, when: str) -> str:
    """A crawl killed by tests.support.hold when the page at ``path`` is
    written (``when``: "now", or once its records are "committed")."""
    pipelines = {
        "webspider.mirror.pipeline.MirrorPipeline": 900,
        "tests.support.hold.KillAfterMirror": 950,
    }
    crawl = start(
        server,
        out,
        *("-s", f"ITEM_PIPELINES={json.dumps(pipelines)}"),
        *("-s", f"TEST_KILL_PATH={path}", "-s", f"TEST_KILL_WHEN={when}"),
    )
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == -signal.SIGKILL, log
    return log


#: summary.json's figures about the site (not about the work: requests and
#: bytes count the pages fetched again)
SITE_FIGURES = (
    "pages",
    "urls_seen",
    "links",
    "broken",
    "duplicates",
    "skipped",
    "rounds",
    "deferred_remaining",
    "status_codes",
)


def figures(out: Path) -> dict[str, object]:
    summary = json.loads((out / "summary.json").read_text())
    return {key: summary[key] for key in SITE_FIGURES}


def changes(out: Path) -> list[str]:
    return sorted((out / "changes.jsonl").read_text("utf-8").splitlines())


def finish(server: TestServer, out: Path, *extra: str) -> str:
    crawl = start(server, out, *extra)
    log = crawl.communicate(timeout=180)[0]
    assert crawl.returncode == 0, log
    assert "Spider closed (finished)" in log, log
    return log


def kill(crawl: subprocess.Popen[str]) -> str:
    crawl.send_signal(signal.SIGKILL)
    return crawl.communicate()[0]


def hold(crawl: subprocess.Popen[str], sig: signal.Signals) -> list[int]:
    """``sig`` (SIGSTOP, SIGCONT) sent to the crawl and its children (the
    page worker), whose pids it returns: the moment a test looks at is held
    while it looks."""
    children = Path(f"/proc/{crawl.pid}/task/{crawl.pid}/children")
    try:
        pids = [int(pid) for pid in children.read_text().split()]
    except OSError:  # the crawl is gone: its exit is the test's to report
        pids = []
    for pid in (crawl.pid, *pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    return pids


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def assert_same_mirror(out: Path, reference: Path) -> None:
    got, expected = files(out / "mirror"), files(reference / "mirror")
    assert sorted(got) == sorted(expected)
    differ = [path for path in expected if got[path] != expected[path]]
    assert not differ, [diff(got[p], expected[p]) for p in differ[:2]]
    # what an update crawl will read: the same index, the same fix-ups left
    assert export(out) == export(reference)


def diff(got: bytes, expected: bytes) -> tuple[bytes, bytes]:
    pairs = zip(got, expected, strict=False)
    at = next(
        (i for i, (a, b) in enumerate(pairs) if a != b), min(map(len, (got, expected)))
    )
    return got[at - 80 : at + 80], expected[at - 80 : at + 80]


#: what the export says of a URL whatever order its pages were written in
#: (``restore``, ``pending`` and ``kept`` tell that history)
SETTLED = ("url", "path", "hash", "size", "kind", "content_type", "gone", "alias")


def export(out: Path) -> list[dict[str, object]]:
    with (out / "mirror-state.jsonl").open() as fh:
        lines = [json.loads(line) for line in fh][1:]  # not the header (its root)
    return [{k: line[k] for k in SETTLED if k in line} for line in lines]


def test_kill_9_while_pages_are_written_then_resume(tmp_path, server):
    pages = site(server, 300)
    reference = tmp_path / "reference"
    finish(server, reference)
    once = len(server.requested_pages())  # what one whole crawl fetches
    assert once >= len(pages)
    out = tmp_path / "out"
    # early (the first pages and the stylesheet), mid-crawl, late; what the
    # server served in all, a resumed crawl fetching only what is left
    for served in (8, 150, 270):
        crawl = start(server, out)
        deadline = time.monotonic() + 90
        while len(server.requested_pages()) < once + served:
            assert crawl.poll() is None, crawl.communicate()[0]
            assert time.monotonic() < deadline, "the crawl did not get that far"
            time.sleep(0.01)  # polling another process's progress
        kill(crawl)
        assert (out / STATE).exists()
    finish(server, out)
    assert_same_mirror(out, reference)


def test_kill_9_during_the_fix_up_then_resume(tmp_path, server):
    site(server, 800, delay=0)  # a fix-up long enough to be killed in
    reference = tmp_path / "reference"
    finish(server, reference)
    out = tmp_path / "out"
    crawl = start(server, out)
    assert crawl.stdout is not None
    log = []
    for line in crawl.stdout:
        log.append(line)
        if "Mirror: fixing up the links" in line:
            break
    else:
        raise AssertionError("no fix-up: " + "".join(log))
    # the fix-up goes through the pages in URL order: the start page first;
    # once its file is fixed, the fix-up is under way. It takes a few hundred
    # ms, the start page's share well under one: the crawl (with its page
    # worker) is held between looks at that file, so that the fix-up cannot
    # pass it, or end, while the test looks (it read the file after the fix
    # before, and waited for a change that had come)
    site_dir = f"{server.name}_{server.port}"
    first = out / "mirror" / site_dir / "index.html"
    fixed = (reference / "mirror" / site_dir / "index.html").read_bytes()
    deadline = time.monotonic() + 30
    children = hold(crawl, signal.SIGSTOP)
    try:
        while first.read_bytes() != fixed:
            assert crawl.poll() is None, "".join(log)
            assert time.monotonic() < deadline, "the start page was not fixed up"
            hold(crawl, signal.SIGCONT)
            time.sleep(0.001)
            children = hold(crawl, signal.SIGSTOP)
        crawl.send_signal(signal.SIGKILL)
    finally:
        # the page worker goes on (and holds the log's pipe) until it finds
        # its crawl gone, as after any kill -9
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        hold(crawl, signal.SIGCONT)
    log.append(kill(crawl))
    assert "Mirror: links fixed up in" not in "".join(log)  # killed before its end
    assert not (out / "mirror-state.jsonl").exists()
    again = finish(server, out)
    # the same command finished the fix-up where it stopped
    assert "Mirror: links fixed up in" in again, again
    assert_same_mirror(out, reference)


def revalidating_site(server: TestServer, pages: int) -> None:
    """``pages`` pages sent with an ETag and a Last-Modified, answered 304
    when a request carries either validator (as a real server does)."""
    for i in range(pages):
        path = "/" if i == 0 else f"/p/{i}"
        links = [f"/p/{c}" for c in (2 * i + 1, 2 * i + 2) if c < pages]
        body = Node(links, delay=0.01).body(path)
        validators = [
            ("ETag", f'"v{i}"'),
            ("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT"),
        ]

        def answer(seen, body=body, validators=validators):
            asked = {k.lower() for k in seen.headers}
            if asked & {"if-none-match", "if-modified-since"}:
                return Page(b"", status=304, headers=validators)
            return Page(body, headers=validators)

        server.add(path, answer)


def statuses(out: Path) -> dict[str, int]:
    with (out / "pages.jsonl").open() as fh:
        return {line["url"]: line["status"] for line in map(json.loads, fh)}


def test_pages_refetched_after_a_kill_are_not_revalidated(tmp_path, server):
    """A page the killed run stored, its records committed by the acks of
    other pages but its own ack not, is fetched again as the uninterrupted
    crawl fetched it (no validators, so a 200), not as an update of the
    mirror (a 304); and counted once in the summary."""
    revalidating_site(server, 200)
    reference = tmp_path / "reference"
    finish(server, reference)
    once = len(server.log)
    out = tmp_path / "out"
    killed_after_mirror(server, out, "/p/3", "committed")
    assert mirror_record_committed(out / STATE, server.url("/p/3"))
    finish(server, out)
    seen = server.log[once:]
    paths = [r.path for r in seen if r.path != "/robots.txt"]
    assert paths.count("/p/3") == 2  # fetched again: not acknowledged
    conditional = [
        r.path
        for r in seen
        if {k.lower() for k in r.headers} & {"if-none-match", "if-modified-since"}
    ]
    assert conditional == []
    assert statuses(out) == statuses(reference)
    assert set(statuses(out).values()) == {200}
    assert figures(out) == figures(reference)
    assert changes(out) == changes(reference)


def test_kill_9_while_a_response_is_in_the_middlewares_then_resume(tmp_path, server):
    """A commit while a response is held in the downloader middlewares
    (counted by Scrapy's stats already): the summary of the resumed crawl
    counts it once, as an uninterrupted crawl does."""
    site(server, 100)
    # robots.txt off: a resumed crawl may ask for it again, which counts
    no_robots = ("-a", "robots=0")
    reference = tmp_path / "reference"
    finish(server, reference, *no_robots)
    out = tmp_path / "out"
    # webspider's, and the one that kills (a value given with -s replaces
    # the project's whole dict)
    middlewares = {
        **DOWNLOADER_MIDDLEWARES,
        "tests.support.hold.KillInDownloader": 800,
    }
    crawl = start(
        server,
        out,
        *no_robots,
        *("-s", f"DOWNLOADER_MIDDLEWARES={json.dumps(middlewares)}"),
        *("-s", "TEST_KILL_PATH=/p/9"),
    )
    log = crawl.communicate(timeout=120)[0]
    assert crawl.returncode == -signal.SIGKILL, log
    finish(server, out, *no_robots)
    assert figures(out) == figures(reference)
    assert changes(out) == changes(reference)


def test_kill_9_right_after_a_page_is_written_then_resume(tmp_path, server):
    """Killed once a page's file and its changes.jsonl line are written, its
    records not committed: the resumed crawl writes it again, and reports it
    once."""
    site(server, 100)
    reference = tmp_path / "reference"
    finish(server, reference)
    out = tmp_path / "out"
    killed_after_mirror(server, out, "/p/3", "now")
    assert not mirror_record_committed(out / STATE, server.url("/p/3"))
    finish(server, out)
    assert changes(out) == changes(reference)
    assert figures(out) == figures(reference)
    assert_same_mirror(out, reference)


def test_ctrl_c_then_resume_keeps_the_links_as_the_pages_wrote_them(tmp_path, server):
    # Pages link each other as ``../p/<n>.html``: a link that already opens
    # its file is kept as the page wrote it. Ctrl-C pauses the crawl and the
    # run that finishes it fixes the links up: a link whose file was not
    # written at the pause must not come back spelled otherwise (``<n>.html``,
    # after a detour through its absolute URL).
    pages = Site()
    n = 120
    for i in range(n):
        links = [f"../p/{(i * k + 1) % n}.html" for k in (3, 7, 11)]
        pages[f"/p/{i}.html"] = Node([f"../p/{i + 1}.html", *links], delay=0.01)
    pages["/"] = Node(["p/0.html"])
    pages.serve(server)
    reference = tmp_path / "reference"
    finish(server, reference)
    once = len(server.requested_pages())
    assert once >= n
    out = tmp_path / "out"
    crawl = start(server, out)
    deadline = time.monotonic() + 90
    while len(server.requested_pages()) < once + 40:
        assert crawl.poll() is None, crawl.communicate()[0]
        assert time.monotonic() < deadline, "the crawl did not get that far"
        time.sleep(0.01)  # polling another process's progress
    crawl.send_signal(signal.SIGINT)
    log = crawl.communicate(timeout=120)[0]
    # interrupted: Ctrl-C's exit status, one line saying what to do
    assert crawl.returncode == 130, log
    assert "Spider closed (shutdown)" in log, log
    assert log.rstrip().splitlines()[-1] == (
        "webspider: interrupted: the crawl is not finished; run the same "
        "command again to continue it"
    ), log[-2000:]
    assert len(server.requested_pages()) < 2 * once  # paused, not finished
    finish(server, out)
    assert_same_mirror(out, reference)
