"""Crawler traps end where their rule says, each with its reason recorded
(webspider.bounds, README "Bounds and traps"). Each site here never ends:
without the rule these crawls run until CLOSESPIDER_PAGECOUNT."""

from __future__ import annotations

import json
import logging
import re
import uuid

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, SeenRequest, html

#: where a crawl that fell into a trap is stopped
RUNAWAY = {"CLOSESPIDER_PAGECOUNT": 150}


def calendar(seen: SeenRequest) -> Page:
    month = int(re.search(r"month=(\d+)", seen.path).group(1))  # type: ignore[union-attr]
    links = f'<a href="/cal?month={month + 1}">next</a>'
    if month:
        links += f'<a href="/cal?month={month - 1}">previous</a>'
    return Page(html(links, title=f"Month {month}"))


@deferred_f_from_coro_f
async def test_a_calendar_stops_at_the_query_bound(tmp_path, server):
    server.add("/cal", calendar)
    result = await crawl(
        tmp_path,
        settings={**RUNAWAY, "WEBSPIDER_TRAPS_MAX_QUERIES": 20},
        start_urls=server.url("/cal?month=0"),
        log_skipped="1",
    )
    months = [p for p in server.requested_pages() if p.startswith("/cal")]
    assert sorted(months) == sorted(f"/cal?month={m}" for m in range(20))
    assert result.stats["webspider/skipped/url_count/query_variants"] == 1
    assert result.exported("skipped.jsonl") == [
        {
            "url": server.url("/cal?month=20"),
            "reason": "query_variants",
            "referer": server.url("/cal?month=19"),
        }
    ]
    summary = json.loads((result.output / "summary.json").read_text())
    assert summary["skipped"]["by_reason"] == {"query_variants": 1}


def folder(seen: SeenRequest) -> Page:
    # every folder has a subfolder "a/": a relative link that never ends (and
    # a title of its own, or it would be a duplicate whose links are not
    # followed)
    return Page(html('<a href="a/">deeper</a>', title=seen.path))


@deferred_f_from_coro_f
async def test_a_path_repeating_itself_stops_at_the_third_repeat(tmp_path, server):
    server.add_prefix("/a/", folder)
    result = await crawl(
        tmp_path, settings=RUNAWAY, start_urls=server.url("/a/"), log_skipped="1"
    )
    assert server.requested_pages() == ["/a/", "/a/a/"]
    assert result.stats["webspider/skipped/url_count/repeated_path"] == 1
    skipped = {r["url"]: r for r in result.exported("skipped.jsonl")}
    assert skipped[server.url("/a/a/a/")] == {
        "url": server.url("/a/a/a/"),
        "reason": "repeated_path",
        "referer": server.url("/a/a/"),
    }


@deferred_f_from_coro_f
async def test_an_overlong_url_is_skipped_with_its_reason(tmp_path, server):
    # without the repeat rule, the same site ends at the URL length limit:
    # Scrapy's own middleware dropped those links with no record
    server.add_prefix("/a/", folder)
    limit = len(server.url("/a/a/a/a/a/"))
    result = await crawl(
        tmp_path,
        settings={
            **RUNAWAY,
            "WEBSPIDER_TRAPS_MAX_REPEATS": 0,
            "URLLENGTH_LIMIT": limit,
        },
        start_urls=server.url("/a/"),
        log_skipped="1",
    )
    assert server.requested_pages() == ["/a/" + "a/" * n for n in range(5)]
    assert result.stats["webspider/skipped/url_count/url_length"] == 1
    assert {r["reason"] for r in result.exported("skipped.jsonl")} == {"url_length"}
    assert result.exported("skipped.jsonl")[0]["url"] == server.url("/a/a/a/a/a/a/")


def session_site(seen: SeenRequest) -> Page:
    # three pages, each linking the others with a fresh session: in the query
    # or as a path parameter (Java servlets' URL rewriting)
    links = "".join(
        f'<a href="/s/{n}?sessionid={uuid.uuid4().hex}">{n}</a>'
        f'<a href="/s/{n};jsessionid={uuid.uuid4().hex.upper()}">{n}</a>'
        for n in range(3)
    )
    return Page(html(links))


@deferred_f_from_coro_f
async def test_fresh_session_ids_do_not_multiply_urls(tmp_path, server):
    server.add_prefix("/s/", session_site)
    await crawl(tmp_path, settings=RUNAWAY, start_urls=server.url("/s/0"))
    requested = server.requested_pages()
    pages = [re.split(r"[?;]", path)[0] for path in requested]
    # each page once (under the session it was first linked with)
    assert sorted(pages) == ["/s/0", "/s/1", "/s/2"]


@deferred_f_from_coro_f
async def test_the_host_budget(tmp_path, server, caplog):
    server.add("/", html("".join(f'<a href="/p{i}">{i}</a>' for i in range(20))))
    for i in range(20):
        server.add(f"/p{i}", html(f"page {i}"))
    with caplog.at_level(logging.WARNING):
        result = await crawl(
            tmp_path,
            settings={"WEBSPIDER_TRAPS_MAX_HOST_REQUESTS": 5},
            start_urls=server.url("/"),
        )
    assert len(server.requested_pages()) == 5  # robots.txt is not counted
    assert result.stats["webspider/skipped/url_count/host_budget"] == 16
    assert "Host site.test had its 5 requests" in caplog.text
