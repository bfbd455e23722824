"""Per-host concurrency holds, measured at the server."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html


def slow_site(server, pages: int) -> None:
    links = "".join(f'<a href="/slow/{i}">{i}</a>' for i in range(pages))
    server.add("/", html(links, title="Home"))
    for i in range(pages):
        server.add(f"/slow/{i}", Page(html("slow"), delay=0.3))


@pytest.mark.parametrize("limit", [1, 3])
@deferred_f_from_coro_f
async def test_requests_in_flight_per_host_never_exceed_the_limit(
    tmp_path, server, limit
):
    slow_site(server, 8)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={"CONCURRENT_REQUESTS_PER_DOMAIN": limit, "CONCURRENT_REQUESTS": 16},
    )
    assert len(result.items) == 9
    # Scrapy 2.19's own downloader starts all 8 at once here.
    assert server.max_in_flight == limit
