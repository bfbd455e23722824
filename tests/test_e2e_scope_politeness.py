"""The issue's "done when": include/exclude lists, an exclusion regex and a
restrictive robots.txt together request exactly what they allow, and every
URL found but not requested has its one reason in skipped.jsonl."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html

pytestmark = pytest.mark.e2e

LINKS = [
    "/docs/",
    "/docs/intro",
    "/docs/Guide",
    "/docs/old/v1",
    "/docs/list?sort=asc",
    "/docs/list?page=2",
    "/docs/secret/keys",
    "/blog/",
    "/docsearch",
]


@deferred_f_from_coro_f
async def test_lists_regex_and_robots_together(tmp_path, server, other_server):
    page = html(
        "".join(f'<a href="{path}">x</a>' for path in LINKS)
        + f'<a href="{other_server.url("/docs/")}">elsewhere</a>'
    )
    for path in LINKS:
        server.add(path, page)
    server.add(
        "/robots.txt",
        Page(
            "User-agent: *\nDisallow: /docs/secret/\n\n"
            "User-agent: webspider\nDisallow: /docs/secret/\nDisallow: /docs/Guide\n",
            content_type="text/plain",
        ),
    )
    result = await crawl(
        tmp_path,
        start_urls=server.url("/docs/"),
        include=server.url("/docs/"),
        exclude=server.url("/docs/old/"),
        exclude_re=r"[?&]sort=",
        log_skipped="1",
    )
    assert sorted(server.requested()) == sorted(
        ["/robots.txt", "/docs/", "/docs/intro", "/docs/list?page=2"]
    )
    assert other_server.requested() == []
    reasons = {r["url"]: r["reason"] for r in result.exported("skipped.jsonl")}
    assert reasons == {
        server.url("/docs/Guide"): "robots",
        server.url("/docs/old/v1"): "exclude",
        server.url("/docs/list?sort=asc"): "exclude_re",
        server.url("/docs/secret/keys"): "robots",
        server.url("/blog/"): "include",
        server.url("/docsearch"): "include",
        other_server.url("/docs/"): "scope",
    }
    # found = requested + skipped, nothing lost in between
    found = {server.url(p) for p in LINKS} | {other_server.url("/docs/")}
    requested = {server.url(p) for p in server.requested_pages()}
    assert found == requested | set(reasons)
    assert not requested & set(reasons)
