"""End to end: broken links, duplicates, summary.json and report.html from a
crawl of a local site with known problems."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

import tests.support.crawl
from tests.support.crawl import crawl
from tests.support.resolver import LoopbackTestResolver
from tests.support.server import Page, SeenRequest, TestServer, html

pytestmark = pytest.mark.e2e


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build_site(server: TestServer, other: TestServer) -> dict[str, str]:
    refused = f"http://site.test:{closed_port()}/nothing-here"
    up, down, nohead = other.url("/up"), other.url("/down"), other.url("/nohead")
    server.add(
        "/",
        html(
            '<a href="/a">A</a> <a href="/b">B</a>'
            '<a href="/missing">Missing page</a>'
            '<a href="/status/500">Server error</a>'
            f'<a href="{refused}">Refused</a>'
            '<a href="/loop">Loop</a>'
            '<a href="/redirect/302?to=ftp://example.org/file">FTP</a>'
            '<a href="/drop">Dropped</a>'
            '<a href="/dup?utm=1">dup 1</a><a href="/dup?utm=2">dup 2</a>'
            '<a href="/copy/one/">copy one</a>'
            f'<a href="{up}">up</a><a href="{down}">down</a>'
            f'<a href="{nohead}">no HEAD</a>'
            '<a href="/go">partner</a><a href="/go-up">partner up</a>',
            title="Home",
        ),
    )
    server.add(
        "/a",
        html(
            '<a href="/missing">Gone</a><img src="/missing-img.png" alt="Logo">'
            '<a href="/b#sec">B section</a><a href="/b#nope">No such section</a>'
            '<a href="/copy/two/">copy two</a>',
            title="A",
        ),
    )
    server.add(
        "/b",
        html(
            '<h2 id="sec">Section</h2><a href="/missing">another text</a>'
            '<a href="#sec">here</a><a href="#gone">Local gone</a>'
            '<a href="#gone">x</a>',
            "B",
        ),
    )
    server.add("/loop", Page(b"", status=302, headers=[("Location", "/loop")]))
    # internal URLs that redirect out of the scope
    away = other.url("/gone-away")
    server.add("/go", Page(b"", status=302, headers=[("Location", away)]))
    server.add("/go-up", Page(b"", status=302, headers=[("Location", up)]))
    server.add("/dup", html("<p>same page, any parameters</p>", title="Dup"))
    copy = html('<p>copied</p><a href="child">child</a>', title="Copy")
    server.add("/copy/one/", copy)
    server.add("/copy/two/", copy)
    server.add("/copy/one/child", html("child", title="Child"))
    server.add("/copy/two/child", html("child", title="Child"))

    other.add("/up", html('<a href="/from-up">x</a>', title="Up"))
    other.add("/down", Page(html("gone"), status=404))

    def head_refused(seen: SeenRequest) -> Page:
        if seen.method == "HEAD":
            return Page(b"", status=405)
        return Page(html('<a href="/from-nohead">x</a>', title="No HEAD"))

    other.add("/nohead", head_refused)
    return {"refused": refused, "up": up, "down": down, "nohead": nohead}


def by_url(records: list[dict]) -> dict[str, dict]:
    return {r["url"]: r for r in records}


def refs(record: dict) -> set[tuple[str, str, str]]:
    return {(r["url"], r["text"], r["tag"]) for r in record["referrers"]}


@deferred_f_from_coro_f
async def test_broken_links_duplicates_and_reports(
    tmp_path, server, other_server, http_client
):
    urls = build_site(server, other_server)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        check_external="1",
        check_anchors="1",
    )
    u = server.url
    broken = by_url(result.exported("broken-links.jsonl"))

    # every broken URL once, with all its referrers and their link texts
    missing = broken[u("/missing")]
    assert (missing["status"], missing["error"], missing["internal"]) == (
        404,
        None,
        True,
    )
    assert refs(missing) == {
        (u("/"), "Missing page", "a"),
        (u("/a"), "Gone", "a"),
        (u("/b"), "another text", "a"),
    }
    assert missing["referrer_count"] == 3
    assert refs(broken[u("/missing-img.png")]) == {(u("/a"), "Logo", "img")}
    assert broken[u("/status/500")]["status"] == 500
    # nothing listens there, so its robots.txt is unreachable and RFC 9309
    # forbids the page: reported broken, with the reason and its referrer
    refused = broken[urls["refused"]]
    assert (refused["status"], refused["error"]) == (None, "robots_unreachable")
    assert "refused" in refused["detail"].lower()
    assert refs(refused) == {(u("/"), "Refused", "a")}
    assert broken[u("/loop")]["error"] == "redirect_loop"
    ftp = broken[u("/redirect/302?to=ftp://example.org/file")]
    assert (ftp["status"], ftp["error"]) == (302, "redirect_scheme")
    assert broken[u("/drop")]["error"] == "connection_lost"
    anchor = broken[u("/b#nope")]
    assert anchor["error"] == "missing_anchor"
    assert refs(anchor) == {(u("/a"), "No such section", "a")}
    assert u("/b#sec") not in broken
    local = broken[u("/b#gone")]
    assert (local["error"], local["referrer_count"]) == ("missing_anchor", 1)
    assert refs(local) == {(u("/b"), "Local gone", "a")}

    # external links: checked once each with HEAD (GET when HEAD is refused),
    # never followed
    down = broken[urls["down"]]
    assert (down["status"], down["internal"]) == (404, False)
    assert refs(down) == {(u("/"), "down", "a")}
    assert urls["up"] not in broken and urls["nohead"] not in broken
    # an internal link that redirects to a dead external page is broken
    go = broken[u("/go")]
    assert (go["status"], go["internal"]) == (404, True)
    assert go["redirected_to"] == other_server.url("/gone-away")
    assert refs(go) == {(u("/"), "partner", "a")}
    assert u("/go-up") not in broken
    seen = [(r.method, r.path) for r in other_server.log]
    assert sorted(seen) == [
        ("GET", "/nohead"),
        ("GET", "/robots.txt"),  # checks obey robots.txt
        ("HEAD", "/down"),
        ("HEAD", "/gone-away"),
        ("HEAD", "/nohead"),
        ("HEAD", "/up"),
    ]
    assert len(broken) == 11

    # duplicates: flagged, and their links not followed again
    pages = {p["url"]: p for p in result.exported()}
    dup1, dup2 = pages[u("/dup?utm=1")], pages[u("/dup?utm=2")]
    assert {dup1["duplicate_of"], dup2["duplicate_of"]} - {None} in (
        {u("/dup?utm=1")},
        {u("/dup?utm=2")},
    )
    # /copy/one/ and /copy/two/ have the same relative link "child"
    first, second = sorted(
        ("/copy/one/", "/copy/two/"), key=lambda p: pages[u(p)]["duplicate_of"] or ""
    )
    assert pages[u(first)]["duplicate_of"] is None
    assert pages[u(second)]["duplicate_of"] == u(first)
    assert first + "child" in server.requested()
    assert second + "child" not in server.requested()
    assert result.stats["webspider/duplicates/page_count"] == 2

    # summary.json: stable keys, figures that match the files
    summary = json.loads((result.output / "summary.json").read_text("utf-8"))
    assert summary["broken"] == {
        "total": 11,
        "internal": 10,
        "external": 1,
        "missing_anchors": 2,
    }
    assert summary["duplicates"]["total"] == 2
    assert summary["pages"] == len(pages)
    # the external links, and the page of a host whose robots.txt is unreachable
    assert summary["skipped"]["by_reason"] == {"scope": 3, "robots_unreachable": 1}
    assert summary["finish_reason"] == "finished"
    for key in ("rounds", "deferred_remaining", "bytes", "elapsed_seconds"):
        assert isinstance(summary[key], (int, float))
    assert summary["status_codes"]["404"] >= 2
    assert set(summary["outputs"]) >= {"pages", "broken_links", "summary", "report"}

    # report.html: self-contained and about this crawl
    report = (result.output / "report.html").read_text("utf-8")
    assert "<svg" in report and "<style>" in report
    assert "<script" not in report and "<link" not in report
    assert "Missing page" in report and "/copy/two/" in report


@deferred_f_from_coro_f
async def test_external_links_not_checked_by_default(tmp_path, server, other_server):
    build_site(server, other_server)
    result = await crawl(tmp_path, start_urls=server.url("/"))
    broken = by_url(result.exported("broken-links.jsonl"))
    assert all(r["internal"] for r in broken.values())
    assert server.url("/b#nope") not in broken  # anchors are off by default
    assert other_server.log == []
    assert result.stats["webspider/broken/url_count/internal"] == len(broken)


@deferred_f_from_coro_f
async def test_normalized_duplicates_redirect_limit_and_timeout(
    tmp_path, server, http_client
):
    server.add(
        "/",
        html(
            '<a href="/t1">t1</a><a href="/t2">t2</a>'
            '<a href="/hop/0">hops</a><a href="/delay/3">slow</a>',
            title="Home",
        ),
    )
    server.add(
        "/t1", html('<p>Same</p><!-- build 1 --> <p>at 12:00:01</p><a href="x1">')
    )
    server.add("/x1", html("x1", title="X1"))
    server.add("/t2", html('<p>Same</p>\n  <p>at 13:14:15</p><a href="x1">'))
    for i in range(6):
        server.add(
            f"/hop/{i}", Page(b"", status=302, headers=[("Location", f"/hop/{i + 1}")])
        )
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={
            "WEBSPIDER_DUPLICATES_NORMALIZE": True,
            "REDIRECT_MAX_TIMES": 2,
            "DOWNLOAD_TIMEOUT": 0.5,
        },
    )
    pages = {p["url"]: p for p in result.exported()}
    flagged = [
        u for u in (server.url("/t1"), server.url("/t2")) if pages[u]["duplicate_of"]
    ]
    assert len(flagged) == 1
    assert result.stats["webspider/duplicates/page_count/normalized"] == 1
    broken = by_url(result.exported("broken-links.jsonl"))
    hops = broken[server.url("/hop/0")]
    assert hops["error"] == "too_many_redirects"
    assert refs(hops) == {(server.url("/"), "hops", "a")}
    assert broken[server.url("/delay/3")]["error"] == "timeout"
    assert len(broken) == 2  # the hops after /hop/0 are nobody's links


@deferred_f_from_coro_f
async def test_reports_written_during_the_crawl_and_when_stopped_early(
    tmp_path, server
):
    out = tmp_path / "out"
    during: dict[str, str] = {}

    def slow(seen: SeenRequest) -> Page:
        # The crawl waits for this answer; meanwhile the periodic rewrite runs.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not _written_during(out, during):
            time.sleep(0.05)
        return Page(html('<a href="/next">next</a>', title="Slow"))

    server.add("/", html('<a href="/gone">gone</a><a href="/slow">slow</a>', "Home"))
    server.add("/slow", slow)
    server.add("/next", html('<a href="/never">never</a>', title="Next"))
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={"WEBSPIDER_REPORT_INTERVAL": 0.1, "CLOSESPIDER_ITEMCOUNT": 2},
    )
    # while the crawl ran: complete files, the crawl marked as running
    assert json.loads(during["summary.json"])["finish_reason"] is None
    assert json.loads(during["broken-links.jsonl"])["url"] == server.url("/gone")
    assert "running" in during["report.html"]
    # stopped early: the files say so
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["finish_reason"] == "closespider_itemcount"
    assert "stopped early: closespider_itemcount" in (out / "report.html").read_text()
    assert "/never" not in server.requested()
    assert len(result.exported("broken-links.jsonl")) == 1
    assert not list(out.glob(".*.tmp"))


def _written_during(out: Path, during: dict[str, str]) -> bool:
    names = ("summary.json", "broken-links.jsonl", "report.html")
    try:
        texts = {name: (out / name).read_text("utf-8") for name in names}
    except FileNotFoundError:
        return False
    if not texts["broken-links.jsonl"].strip():
        return False
    during.update(texts)
    return True


@deferred_f_from_coro_f
async def test_broken_links_survive_a_pause(tmp_path, server):
    """Stopped and resumed with JOBDIR: the URLs requested before the pause are
    not requested again, and the report still has them with all referrers."""
    server.add("/", html('<a href="/a">A</a><a href="/gone1">one</a>', "Home"))
    server.add("/a", html('<a href="/b">B</a><a href="/gone2">two from a</a>', "A"))
    server.add(
        "/b", html('<a href="/gone1">one from b</a><a href="/gone2">two</a>', "B")
    )
    settings = {"JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS": 1}
    first = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={**settings, "CLOSESPIDER_ITEMCOUNT": 2},
    )
    assert json.loads((first.output / "summary.json").read_text())["finish_reason"] == (
        "closespider_itemcount"
    )
    before_pause = server.requested_pages()
    assert "/b" not in before_pause  # it is left for the resumed crawl
    second = await crawl(tmp_path, start_urls=server.url("/"), settings=settings)
    pages = server.requested_pages()
    assert sorted(pages) == sorted(set(pages))  # nothing fetched twice
    broken = by_url(second.exported("broken-links.jsonl"))
    u = server.url
    assert set(broken) == {u("/gone1"), u("/gone2")}
    assert refs(broken[u("/gone1")]) == {
        (u("/"), "one", "a"),
        (u("/b"), "one from b", "a"),
    }
    assert refs(broken[u("/gone2")]) == {
        (u("/a"), "two from a", "a"),
        (u("/b"), "two", "a"),
    }


@deferred_f_from_coro_f
async def test_rounds_in_the_summary_and_report(tmp_path, server):
    result = await crawl(tmp_path, start_urls=server.url("/chain/0?n=5"), max_depth="1")
    summary = json.loads((result.output / "summary.json").read_text("utf-8"))
    assert summary["pages"] == 5
    assert summary["rounds"] == result.stats["webspider/depth/round_completed_count"]
    assert summary["rounds"] >= 2
    assert summary["deferred_remaining"] == 0
    report = (result.output / "report.html").read_text("utf-8")
    assert ">round 1<" in report


@pytest.mark.parametrize("robots", [True, False], ids=["robots", "no-robots"])
@deferred_f_from_coro_f
async def test_a_name_that_does_not_resolve_is_a_dns_error(
    tmp_path, server, http_client, robots
):
    unknown = server.url("/x").replace("site.test", "nxdomain.site.test")
    # with robots.txt obeyed, a host whose robots.txt redirects to a name that
    # does not resolve is unreachable (RFC 9309 2.3.1.2), not dns_error: its
    # own name resolves
    redirected = server.url("/y").replace("site.test", "redir.site.test")

    def robots_txt(seen: SeenRequest) -> Page:
        if seen.headers.get("Host", "").startswith("redir."):
            target = server.url("/robots.txt").replace("site.test", "nxdomain.b.test")
            return Page(b"", status=301, headers=[("Location", target)])
        return Page(b"", status=404)

    server.add("/robots.txt", robots_txt)
    server.add(
        "/",
        html(
            f'<a href="{unknown}">nowhere</a><a href="/a">A</a>'
            f'<a href="{redirected}">elsewhere</a>'
        ),
    )
    server.add("/a", html("a", title="A"))
    server.add("/y", html("y", title="Y"))
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        scope="domain",
        settings={"ROBOTSTXT_OBEY": robots},
    )
    broken = by_url(result.exported("broken-links.jsonl"))
    # the name that does not resolve: dns_error whether robots.txt is obeyed
    # or not (with it, the robots.txt download found no address on each try)
    assert broken[unknown]["error"] == "dns_error"
    assert refs(broken[unknown]) == {(server.url("/"), "nowhere", "a")}
    assert [s.path for s in server.log].count("/a") == 1
    summary = json.loads((result.output / "summary.json").read_text("utf-8"))
    # a failure, not a choice: not in the skipped counts (only the redirected
    # robots.txt's origin is, with robots.txt obeyed)
    skipped = summary["skipped"]["by_reason"].get("robots_unreachable", 0)
    assert skipped == (1 if robots else 0)
    assert result.stats["webspider/pages/failed_count"] == 1
    if robots:
        assert broken[unknown]["detail"].startswith("robots.txt: ")
        assert broken[redirected]["error"] == "robots_unreachable"
        assert len(broken) == 2
        assert result.stats["webspider/broken/url_count/internal"] == 2
        assert "/y" not in server.requested_pages()
    else:
        assert redirected not in broken
        assert len(broken) == 1
        assert result.stats["webspider/broken/url_count/internal"] == 1
        assert "/y" in server.requested_pages()


class ScriptedResolver(LoopbackTestResolver):
    """``failing``: name → how many of its next lookups find no address;
    ``gone``: names that no longer resolve; other names as the test
    resolver's."""

    failing: dict[str, int] = {}
    gone: set[str] = set()

    def getHostByName(self, name, timeout=()):
        cls = type(self)
        if cls.failing.get(name, 0) > 0:
            cls.failing[name] -= 1
        elif name not in cls.gone:
            return super().getHostByName(name, timeout)
        return defer.fail(DNSLookupError(f"no such name (scripted): {name}"))


@deferred_f_from_coro_f
async def test_dns_error_only_when_every_robots_txt_attempt_found_no_address(
    tmp_path, server, http_client, monkeypatch
):
    """A name that fails and then resolves is crawled (robots.txt is
    retried); one whose robots.txt answered 503 before its name stopped
    resolving is robots_unreachable, not dns_error."""
    once = server.url("/once").replace("site.test", "once.site.test")
    flip = server.url("/flip").replace("site.test", "flip.site.test")
    monkeypatch.setattr(tests.support.crawl, "LoopbackTestResolver", ScriptedResolver)
    # the address check's lookup and robots.txt's first attempt fail
    monkeypatch.setattr(ScriptedResolver, "failing", {"once.site.test": 2})
    monkeypatch.setattr(ScriptedResolver, "gone", set())

    def robots_txt(seen: SeenRequest) -> Page:
        if seen.headers.get("Host", "").startswith("flip."):
            ScriptedResolver.gone.add("flip.site.test")
            # closed after it, so the next attempt looks the name up again
            return Page(b"", status=503, headers=[("Connection", "close")])
        return Page(b"", status=404)

    server.add("/robots.txt", robots_txt)
    server.add("/", html(f'<a href="{once}">once</a><a href="{flip}">flip</a>'))
    server.add("/once", html("once", title="Once"))
    server.add("/flip", html("flip", title="Flip"))
    result = await crawl(tmp_path, start_urls=server.url("/"), scope="domain")
    hosts = [(s.headers.get("Host", "").split(":")[0], s.path) for s in server.log]
    assert ("once.site.test", "/once") in hosts
    assert hosts.count(("flip.site.test", "/robots.txt")) == 1
    assert ("flip.site.test", "/flip") not in hosts
    broken = by_url(result.exported("broken-links.jsonl"))
    assert set(broken) == {flip}
    assert broken[flip]["error"] == "robots_unreachable"
    # flip's 3 retries, and once's robots.txt retried after its failure
    assert result.stats["webspider/robotstxt/retried_count"] == 4
