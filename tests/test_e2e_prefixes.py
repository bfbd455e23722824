"""include/exclude prefix lists and exclude_re, checked against what the
test server saw requested."""

from __future__ import annotations

import logging

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, TestServer, html

pytestmark = pytest.mark.e2e

SKIPPED = "webspider/skipped/url_count/"
SPORTS_LINKS = [
    "/sports",
    "/sports/",
    "/sports/football",
    "/sportsday",
    "/Sports/Cricket",
    "/%73ports/tennis",  # %73 is "s": the same URL once normalised
    "/news",
    "/sports/private/x",
]


def sports_site(server: TestServer) -> None:
    links = "".join(f'<a href="{path}">{path}</a>' for path in SPORTS_LINKS)
    server.add("/", html(links))
    for path in SPORTS_LINKS:
        server.add(path, html(links))


@deferred_f_from_coro_f
async def test_prefix_semantics(tmp_path, server):
    """A plain prefix, case-insensitive, normalised; exclude wins."""
    sports_site(server)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/sports"),
        include=f"HTTP://SITE.TEST:{server.port}/sports",
        exclude=server.url("/sports/private"),
    )
    assert sorted(server.requested_pages()) == sorted(
        [
            "/sports",
            "/sports/",
            "/sports/football",
            "/sportsday",
            "/Sports/Cricket",
            "/%73ports/tennis",
        ]
    )
    assert result.stats[SKIPPED + "include"] == 1  # /news
    assert result.stats[SKIPPED + "exclude"] == 1  # /sports/private/x


@deferred_f_from_coro_f
async def test_folder_only_and_case_sensitive(tmp_path, server):
    sports_site(server)
    await crawl(
        tmp_path,
        settings={"WEBSPIDER_PREFIXES_CASE_SENSITIVE": True},
        start_urls=server.url("/sports/"),
        include=server.url("/sports/"),
    )
    assert sorted(server.requested_pages()) == [
        "/%73ports/tennis",
        "/sports/",
        "/sports/football",
        "/sports/private/x",
    ]


@deferred_f_from_coro_f
async def test_lists_from_files_and_settings(tmp_path, server):
    sports_site(server)
    include = tmp_path / "include.txt"
    include.write_text(f"# sports only\n{server.url('/sports/')}\n", "utf-8")
    await crawl(
        tmp_path,
        settings={"WEBSPIDER_EXCLUDE": [server.url("/sports/f")]},
        start_urls=server.url("/sports/"),
        include=f"@{include}",
    )
    assert sorted(server.requested_pages()) == [
        "/%73ports/tennis",
        "/Sports/Cricket",
        "/sports/",
        "/sports/private/x",
    ]


@deferred_f_from_coro_f
async def test_seeds_outside_are_warned_and_dropped(tmp_path, server, caplog):
    sports_site(server)
    with caplog.at_level(logging.WARNING):
        result = await crawl(
            tmp_path,
            start_urls=f"{server.url('/news')},{server.url('/sports/football')}",
            include=server.url("/sports/"),
            log_skipped="1",
        )
    assert "/news" not in server.requested_pages()
    assert "/sports/football" in server.requested_pages()
    assert f"Start URL {server.url('/news')} is not fetched" in caplog.text
    skipped = result.exported("skipped.jsonl")
    assert {"url": server.url("/news"), "reason": "include", "referer": None} in (
        skipped
    )


@deferred_f_from_coro_f
async def test_exclude_re(tmp_path, server):
    links = [
        "/list?page=2",
        "/list?sort=asc",
        "/list?page=2&order=desc",
        "/print/article",
        "/article?PHPSESSID=1",
    ]
    server.add("/", html("".join(f'<a href="{u}">x</a>' for u in links)))
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        exclude_re=r"[?&](sort|order|PHPSESSID)=|/print/",
        log_skipped="1",
    )
    assert sorted(server.requested_pages()) == ["/", "/list?page=2"]
    assert result.stats[SKIPPED + "exclude_re"] == 4
    reasons = {
        r["url"]: (r["reason"], r["referer"]) for r in result.exported("skipped.jsonl")
    }
    assert reasons[server.url("/print/article")] == ("exclude_re", server.url("/"))


@deferred_f_from_coro_f
async def test_redirect_leaving_the_include_list(tmp_path, server):
    server.add("/docs/", html('<a href="/docs/old">old</a><a href="/docs/a">a</a>'))
    server.add("/docs/a", html("a"))
    server.add("/docs/old", Page(b"", status=301, headers=[("Location", "/blog/new")]))
    server.add("/blog/new", html("new"))
    result = await crawl(
        tmp_path, start_urls=server.url("/docs/"), include=server.url("/docs/")
    )
    assert sorted(server.requested_pages()) == ["/docs/", "/docs/a", "/docs/old"]
    assert result.stats[SKIPPED + "include"] == 1


@deferred_f_from_coro_f
async def test_robots_txt_is_read_outside_the_include_list(tmp_path, server):
    """robots.txt is never a page of the include list, yet it is obeyed."""
    server.add("/robots.txt", Page("User-agent: *\nDisallow: /docs/b\n"))
    server.add("/docs/", html('<a href="/docs/a">a</a><a href="/docs/b">b</a>'))
    server.add("/docs/a", html("a"))
    await crawl(tmp_path, start_urls=server.url("/docs/"), include=server.url("/docs/"))
    assert server.requested() == ["/robots.txt", "/docs/", "/docs/a"]


@deferred_f_from_coro_f
async def test_skipped_log_names_a_few_hosts_per_reason(tmp_path, server, caplog):
    hosts = [f"h{i}.example" for i in range(5)]
    server.add("/", html("".join(f'<a href="http://{h}/">x</a>' for h in hosts)))
    with caplog.at_level(logging.INFO, logger="webspider.reports.skippedlog"):
        result = await crawl(
            tmp_path,
            settings={"WEBSPIDER_LOG_SKIPPED_MAX_HOSTS": 2},
            start_urls=server.url("/"),
            log_skipped="1",
        )
    lines = [r.getMessage() for r in caplog.records if "reason" in r.getMessage()]
    assert len(lines) == 3
    assert "further hosts for reason scope" in lines[2]
    assert result.stats[SKIPPED + "scope"] == 5
    assert len(result.exported("skipped.jsonl")) == 5
