"""skipped.jsonl of a crawl stopped and run again: the whole crawl's skips.

A resumed crawl opened skipped.jsonl for writing anew, so the skips of the
part before the stop were lost (127 of 1,389 on the PostgreSQL manual after
a double Ctrl-C), while the summary still counted them."""

from __future__ import annotations

import json

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import html


@deferred_f_from_coro_f
async def test_a_resumed_crawl_keeps_the_skips_of_its_first_part(
    tmp_path, server, other_server
):
    pages = ["/", "/a", "/b", "/c"]
    outside = {p: other_server.url(f"/out{p.strip('/') or 'home'}") for p in pages}
    for page in pages:
        links = "".join(f'<a href="{p}">{p}</a>' for p in pages)
        server.add(page, html(f'{links}<a href="{outside[page]}">away</a>'))
    settings = {"CONCURRENT_REQUESTS": 1}
    first = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        log_skipped="1",
        settings={**settings, "CLOSESPIDER_ITEMCOUNT": 2},
    )
    assert first.stats["finish_reason"] == "closespider_itemcount"
    before = server.requested_pages()
    assert set(before) < set(pages)
    resumed = await crawl(
        tmp_path, start_urls=server.url("/"), log_skipped="1", settings=settings
    )
    assert resumed.stats["webspider/state/resumed"] == 1
    assert sorted(server.requested_pages()) == sorted(pages)  # each once
    assert other_server.requested() == []
    lines = [
        json.loads(line)
        for line in (resumed.output / "skipped.jsonl").read_text().splitlines()
    ]
    assert sorted(line["url"] for line in lines) == sorted(outside.values())
    assert {line["reason"] for line in lines} == {"scope"}
