"""Depth cap with deferral, end to end: rounds, depths, and what the server saw.

The site (``SITE``) has a chain of 12 pages (the deepest page is 12 links from
the start), a wide tree, a diamond whose short path is slow, a cycle, pages
with requisites beyond the cap, and a URL that is both a deferred page link
and another page's requisite. ``Site.predict`` says in which round and at
which depth each page must be fetched; the tests compare that with the
server's request log and with pages.jsonl."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import html
from tests.support.site import Node, Site

pytestmark = pytest.mark.e2e

if TYPE_CHECKING:
    from tests.support.crawl import CrawlResult
    from tests.support.server import TestServer


def make_site() -> Site:
    site = Site()
    site["/"] = Node(["/chain/0", "/tree", "/dia/slow", "/dia/b1", "/cycle/0"])
    for i in range(12):  # / -> chain/0 (depth 1) ... chain/11 (depth 12)
        site[f"/chain/{i}"] = Node([f"/chain/{i + 1}"] if i < 11 else [])
    site["/tree"] = Node([f"/tree/{i}" for i in range(4)])
    for i in range(4):
        site[f"/tree/{i}"] = Node([f"/tree/{i}/{j}" for j in range(3)])
        for j in range(3):
            site[f"/tree/{i}/{j}"] = Node([f"/tree/{i}/{j}/leaf"])
            site[f"/tree/{i}/{j}/leaf"] = Node()
    # requisites beyond the cap, and a stylesheet's own requisite
    site["/tree/0"].requisites = ["/style.css", "/logo.png"]
    site["/style.css"] = Node(requisites=["/bg.png"], content_type="text/css")
    site["/logo.png"] = Node(content_type="image/png")
    site["/bg.png"] = Node(content_type="image/png")
    # deferred as a page link of /tree/1 (level 2), then fetched as a requisite
    # of a frame-like requisite of /tree/2 (found on level 3, after the deferral)
    site["/tree/1"].links.append("/shared.png")
    site["/tree/2"].requisites = ["/frame.html"]
    site["/frame.html"] = Node(requisites=["/shared.png"])
    site["/shared.png"] = Node(content_type="image/png")
    # diamond: the short path is slow, the long one fast
    site["/dia/slow"] = Node(["/dia/t"], delay=0.4)
    site["/dia/b1"] = Node(["/dia/b2"])
    site["/dia/b2"] = Node(["/dia/t"])
    site["/dia/t"] = Node(["/dia/u"])
    site["/dia/u"] = Node()
    # cycle
    for i in range(4):
        site[f"/cycle/{i}"] = Node([f"/cycle/{(i + 1) % 4}"])
    return site


SITE = make_site()


def path_of(server: TestServer, url: str) -> str:
    assert url.startswith(server.base), url
    return url[len(server.base) :]


def fetched(server: TestServer, result: CrawlResult) -> dict[str, tuple[int, int]]:
    return {
        path_of(server, item["url"]): (item["round"], item["depth"])
        for item in result.exported()
    }


def assert_each_once(server: TestServer, expected: set[str]) -> None:
    counts = Counter(server.requested_pages())
    assert {p: n for p, n in counts.items() if n > 1} == {}
    assert set(counts) == expected


def assert_breadth_first(server: TestServer, order: dict[str, tuple[int, int]]) -> None:
    """The server saw every level of every round before the next one began."""
    seen = [order[p] for p in server.requested_pages()]
    assert seen == sorted(seen)


@deferred_f_from_coro_f
async def test_prediction_of_the_test_site_itself() -> None:
    # the oracle, checked by hand on the pages that matter
    p = SITE.predict(max_depth=2)
    assert p.fetched["/chain/1"] == (0, 2)
    assert p.fetched["/chain/2"] == (1, 0)
    assert p.fetched["/chain/11"] == (4, 0)
    assert p.fetched["/dia/t"] == (0, 2)
    assert p.fetched["/dia/u"] == (1, 0)
    assert p.fetched["/bg.png"] == (0, 4)
    assert p.fetched["/shared.png"] == (0, 4)
    assert p.fetched["/cycle/2"] == (1, 0)
    assert p.fetched["/cycle/3"] == (1, 1)
    assert p.fetched["/tree/3/2/leaf"] == (1, 1)
    assert set(p.fetched) == set(SITE)
    assert p.seeds_fetched == 1
    assert p.left == {}


@deferred_f_from_coro_f
async def test_max_depth_2_fetches_every_page_once_in_rounds(tmp_path, server):
    SITE.serve(server)
    result = await crawl(tmp_path, start_urls=server.url("/"), max_depth="2")
    predicted = SITE.predict(max_depth=2)

    assert_each_once(server, set(SITE))
    assert fetched(server, result) == predicted.fetched
    assert_breadth_first(server, predicted.fetched)
    stats = result.stats
    assert stats["webspider/depth/round_completed_count"] == 5
    assert stats["webspider/depth/deferred_count"] == predicted.deferred
    # every deferred URL was fetched in a later round: none was skipped
    assert "webspider/skipped/url_count/depth" not in stats
    assert stats["webspider/depth/seed_already_fetched_count"] == 1
    assert stats["webspider/depth/deferred_left_count"] == 0
    assert stats["webspider/depth/deepest"] == 4  # /bg.png, a requisite
    pages = Counter(r for r, _ in predicted.fetched.values())
    for round_, n in pages.items():
        assert stats[f"webspider/depth/page_count/{round_}"] == n
    assert not (result.output / "deferred.jsonl").exists()


@deferred_f_from_coro_f
async def test_defer_0_drops_exactly_the_over_depth_pages(tmp_path, server):
    SITE.serve(server)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        max_depth="2",
        defer="0",
        settings={"WEBSPIDER_LOG_SKIPPED": True},
    )
    predicted = SITE.predict(max_depth=2, defer=False)
    assert {p for p, (r, _) in predicted.fetched.items()} == {
        p for p, (r, _) in SITE.predict(max_depth=2).fetched.items() if r == 0
    }
    assert_each_once(server, set(predicted.fetched))
    assert fetched(server, result) == predicted.fetched
    skipped = {path_of(server, s["url"]) for s in result.exported("skipped.jsonl")}
    over = {"/chain/2", "/tree/0/0", "/dia/u", "/cycle/2"}
    assert over <= skipped
    # /shared.png is dropped as /tree/1's link, fetched as /frame.html's image
    assert skipped & set(predicted.fetched) == {"/shared.png"}
    assert result.stats["webspider/skipped/url_count/depth_limit"] >= len(skipped)
    assert "webspider/depth/deferred_count" not in result.stats
    assert not (result.output / "deferred.jsonl").exists()


@deferred_f_from_coro_f
async def test_max_rounds_stops_and_writes_the_rest(tmp_path, server):
    SITE.serve(server)
    result = await crawl(
        tmp_path, start_urls=server.url("/"), max_depth="2", max_rounds="1"
    )
    predicted = SITE.predict(max_depth=2, max_rounds=1)
    assert_each_once(server, set(predicted.fetched))
    assert fetched(server, result) == predicted.fetched
    assert max(r for r, _ in predicted.fetched.values()) == 1
    left = {
        path_of(server, d["url"]): (
            d["depth"],
            path_of(server, d["referer"]),
            d["round"],
        )
        for d in result.exported("deferred.jsonl")
    }
    assert left == predicted.left
    assert left == {"/chain/5": (3, "/chain/4", 1)}
    assert result.stats["webspider/depth/deferred_left_count"] == 1
    assert result.stats["webspider/skipped/url_count/depth"] == 1
    assert result.stats["webspider/depth/round_completed_count"] == 2

    # a later crawl into the same output starts from deferred.jsonl; when it
    # ends with nothing deferred, the file goes
    server.clear()
    deferred = result.output / "deferred.jsonl"
    again = await crawl(tmp_path, start_urls=f"@{deferred}", max_depth="2")
    rest = {f"/chain/{i}" for i in range(5, 12)}
    assert_each_once(server, rest)
    assert fetched(server, again)["/chain/11"] == (2, 0)
    assert not deferred.exists()


@deferred_f_from_coro_f
async def test_closespider_leaves_deferred_jsonl(tmp_path, server):
    SITE.serve(server)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        max_depth="1",
        settings={"CLOSESPIDER_PAGECOUNT": 3, "CONCURRENT_REQUESTS": 1},
    )
    requested = set(server.requested_pages())
    left = result.exported("deferred.jsonl")
    assert left
    assert all(path_of(server, d["url"]) not in requested for d in left)
    assert result.stats["webspider/depth/deferred_left_count"] == len(left)
    assert result.stats["webspider/skipped/url_count/depth"] == len(left)


@deferred_f_from_coro_f
async def test_breadth_first_gives_shortest_depth_without_a_cap(tmp_path, server):
    # /dia/t is 2 links away through the slow page and 3 through the fast
    # pages; the fast path is parsed first unless levels are kept apart
    site = Site(
        {
            "/": Node(["/dia/slow", "/dia/b1"]),
            **{p: n for p, n in SITE.items() if p.startswith("/dia/")},
        }
    )
    site.serve(server)
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert fetched(server, result)["/dia/t"] == (0, 2)
    assert fetched(server, result)["/dia/u"] == (0, 3)
    assert_breadth_first(server, site.predict().fetched)


@deferred_f_from_coro_f
async def test_shuffle_queues_links_in_random_order(tmp_path, server):
    links = [f"/p/{i}" for i in range(30)]
    site = Site({"/": Node(links), **{p: Node() for p in links}})
    site.serve(server)
    await crawl(
        tmp_path,
        start_urls=server.url("/"),
        shuffle="1",
        settings={"CONCURRENT_REQUESTS": 1},
    )
    order = server.requested_pages()
    assert order[0] == "/"
    assert sorted(order[1:]) == sorted(links)
    assert order[1:] != links  # 1 chance in 30! to fail


@deferred_f_from_coro_f
async def test_out_of_scope_links_are_skipped_not_deferred(
    tmp_path, server, other_server
):
    site = Site(
        {
            "/": Node(["/a", other_server.url("/x")]),
            "/a": Node(["/b", other_server.url("/y")]),  # both at depth 2 > 1
            "/b": Node(),
        }
    )
    site.serve(server)
    result = await crawl(tmp_path, start_urls=server.url("/"), max_depth="1")
    assert fetched(server, result) == {"/": (0, 0), "/a": (0, 1), "/b": (1, 0)}
    assert other_server.requested() == []
    assert result.stats["webspider/depth/deferred_count"] == 1  # /b only
    assert result.stats["webspider/skipped/url_count/scope"] == 2


@deferred_f_from_coro_f
async def test_nofollow_links_beyond_the_cap_are_not_deferred(tmp_path, server):
    server.add("/", html('<a href="/a">a</a>'))
    server.add("/a", html('<a href="/b">b</a><a rel="nofollow" href="/nf">nf</a>'))
    server.add("/b", html("b"))
    server.add("/nf", html("nf"))
    result = await crawl(tmp_path, start_urls=server.url("/"), max_depth="1")
    assert server.requested_pages() == ["/", "/a", "/b"]
    assert result.stats["webspider/depth/deferred_count"] == 1  # /b only
    assert result.stats["webspider/skipped/url_count/nofollow_link"] == 1
