"""End-to-end: pages that say noindex/nofollow, asserted from the server's log.

Every page that must not be followed links to a page named /bomb…: if the
server ever sees a request for one, the test has failed (as GNU wget's
Test-meta-robots)."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html
from webspider.spiders.webspider import WebSpider

pytestmark = pytest.mark.e2e

# (path, <head> extra, response headers) of pages that must not be followed
NOFOLLOW_PAGES = [
    # meta robots, every spelling of the issue and of wget's test
    ("/m1", '<meta name="robots" content="nofollow">', []),
    ("/m2", '<meta name="ROBOTS" content="NoFollow">', []),
    ("/m3", '<meta name="roBoTS" content="noFolLow ,  foo, bar ">', []),
    ("/m4", '<meta name="rObOts" content=" foo  ,  NOfOllow ,  bar ">', []),
    ("/m5", '<meta name="RoBotS" content="foo,BAr,   nofOLLOw    ">', []),
    ("/m6", '<meta name="robots" content="none">', []),
    ("/m7", '<meta name="robots" content="noindex nofollow">', []),
    (
        "/m8",
        '<meta name="robots" content="all"><meta name="robots" content="nofollow">',
        [],
    ),
    # our own name
    ("/w1", '<meta name="webspider" content="nofollow">', []),
    ("/w2", '<meta name="WebSpider" content="noindex,nofollow">', []),
    # X-Robots-Tag, plain, repeated, multi-valued, in our user-agent form
    ("/h1", "", [("X-Robots-Tag", "nofollow")]),
    ("/h2", "", [("X-Robots-Tag", "noarchive"), ("X-Robots-Tag", "NOFOLLOW")]),
    ("/h3", "", [("X-Robots-Tag", "noindex, nofollow")]),
    ("/h4", "", [("X-Robots-Tag", "webspider: nofollow")]),
    ("/h5", "", [("X-Robots-Tag", "googlebot: noindex, webspider: none")]),
    ("/h6", "", [("X-Robots-Tag", "none")]),
]

# pages whose directives do NOT stop us: their link must be requested
FOLLOW_PAGES = [
    ("/f1", '<meta name="googlebot" content="nofollow">', []),
    ("/f2", '<meta name="robots" content="noindex, follow">', []),
    ("/f3", "", [("X-Robots-Tag", "otherbot: nofollow")]),
    ("/f4", "", [("X-Robots-Tag", "googlebot: none")]),
    ("/f5", '<meta name="robots" content="no-follow, nofollows">', []),
]


def add_site(server, pages, target: str) -> None:
    links = "".join(f'<a href="{path}">{path}</a>' for path, _, _ in pages)
    server.add("/", html(links, title="Home"))
    for path, head, headers in pages:
        body = html(f'<a href="{target}{path}">next</a>', title=path, head=head)
        server.add(path, Page(body, headers=headers))
        server.add(target + path, html("leaf", title="leaf"))


@deferred_f_from_coro_f
async def test_nofollow_pages_links_are_never_requested(tmp_path, server):
    add_site(server, NOFOLLOW_PAGES, "/bomb")
    follow_links = "".join(f'<a href="{p}">{p}</a>' for p, _, _ in FOLLOW_PAGES)
    for path, head, headers in FOLLOW_PAGES:
        body = html(f'<a href="/ok{path}">next</a>', title=path, head=head)
        server.add(path, Page(body, headers=headers))
    home = html(
        "".join(f'<a href="{p}">{p}</a>' for p, _, _ in NOFOLLOW_PAGES) + follow_links
    )
    server.add("/", home)

    result = await crawl(
        tmp_path, start_urls=server.url("/"), settings={"WEBSPIDER_LOG_SKIPPED": True}
    )

    requested = server.requested_pages()
    assert [p for p in requested if p.startswith("/bomb")] == []
    for path, _, _ in NOFOLLOW_PAGES:
        assert path in requested
    assert sorted(p for p in requested if p.startswith("/ok")) == sorted(
        "/ok" + p for p, _, _ in FOLLOW_PAGES
    )
    skipped = result.exported("skipped.jsonl")
    assert sorted(r["url"] for r in skipped) == sorted(
        server.url("/bomb" + p) for p, _, _ in NOFOLLOW_PAGES
    )
    assert {r["reason"] for r in skipped} == {"nofollow"}
    assert {r["referer"] for r in skipped} == {
        server.url(p) for p, _, _ in NOFOLLOW_PAGES
    }
    stats = result.stats
    assert stats["webspider/skipped/url_count/nofollow"] == len(NOFOLLOW_PAGES)
    assert stats["webspider/directives/nofollow_count"] == len(NOFOLLOW_PAGES)
    assert stats["webspider/directives/nofollow_count/meta"] == 10
    assert stats["webspider/directives/nofollow_count/header"] == 6


@deferred_f_from_coro_f
async def test_rel_nofollow_links_are_skipped_one_by_one(tmp_path, server):
    server.add(
        "/",
        html(
            '<a href="/bomb-1" rel="nofollow">1</a>'
            '<a href="/bomb-2" rel="external nofollow">2</a>'
            '<a href="/bomb-3" rel="NoFollow noopener">3</a>'
            '<map><area href="/bomb-4" rel="nofollow"></map>'
            '<a href="/ok-1">plain</a>'
            '<a href="/ok-2" rel="external">external</a>'
            # nofollow on one of two links to the same URL: the other is followed
            '<a href="/ok-3" rel="nofollow">x</a><a href="/ok-3">y</a>'
            '<a href="/page">page</a>',
            title="Home",
        ),
    )
    # rel=nofollow speaks for one link on one page: elsewhere it is followed
    server.add("/page", html('<a href="/ok-4">plain</a>', title="Page"))
    server.add("/ok-1", html('<a href="/ok-4" rel="nofollow">again</a>'))

    result = await crawl(
        tmp_path, start_urls=server.url("/"), settings={"WEBSPIDER_LOG_SKIPPED": True}
    )

    requested = server.requested_pages()
    assert [p for p in requested if p.startswith("/bomb")] == []
    for path in ("/ok-1", "/ok-2", "/ok-3", "/ok-4", "/page"):
        assert requested.count(path) == 1, path
    skipped = {r["url"]: r["reason"] for r in result.exported("skipped.jsonl")}
    # /ok-4 is recorded too when /ok-1 (rel=nofollow) is parsed before /page
    skipped.pop(server.url("/ok-4"), None)
    assert skipped == {server.url(f"/bomb-{i}"): "nofollow_link" for i in range(1, 5)}
    assert result.stats["webspider/skipped/url_count/nofollow_link"] >= 4


@deferred_f_from_coro_f
async def test_noindex_pages_are_not_exported_but_their_links_are_followed(
    tmp_path, server
):
    server.add(
        "/",
        html('<a href="/meta">m</a><a href="/header">h</a><a href="/mine">w</a>'),
    )
    server.add(
        "/meta",
        html(
            '<a href="/child-meta">c</a>',
            head='<meta name="robots" content="NOINDEX">',
        ),
    )
    server.add(
        "/header",
        Page(
            html('<a href="/child-header">c</a>'),
            headers=[("X-Robots-Tag", "webspider: noindex")],
        ),
    )
    server.add(
        "/mine",
        html(
            '<a href="/child-mine">c</a>',
            head='<meta name="webspider" content="noindex">',
        ),
    )
    server.add(
        "/image.png",
        Page(
            b"\x89PNG", content_type="image/png", headers=[("X-Robots-Tag", "noindex")]
        ),
    )
    server.add("/child-meta", html('<img src="/image.png">'))
    server.add("/child-header", html("c"))
    server.add("/child-mine", html("c"))

    result = await crawl(tmp_path, start_urls=server.url("/"))

    requested = set(server.requested_pages())
    assert {"/child-meta", "/child-header", "/child-mine", "/image.png"} <= requested
    exported = {row["url"] for row in result.exported()}
    assert exported == {
        server.url(p) for p in ("/", "/child-meta", "/child-header", "/child-mine")
    }
    assert all(row["noindex"] is False for row in result.exported())
    assert result.stats["webspider/directives/item_dropped_count"] == 4
    assert result.stats["webspider/directives/noindex_count/meta"] == 2
    assert result.stats["webspider/directives/noindex_count/header"] == 2


@deferred_f_from_coro_f
async def test_export_noindex_exports_them_flagged(tmp_path, server):
    server.add("/", html('<a href="/hidden">h</a>'))
    server.add(
        "/hidden",
        html("secret", head='<meta name="robots" content="noindex">', title="Hidden"),
    )

    result = await crawl(tmp_path, start_urls=server.url("/"), export_noindex="1")

    rows = {row["url"]: row for row in result.exported()}
    assert rows[server.url("/hidden")]["noindex"] is True
    assert rows[server.url("/")]["noindex"] is False
    assert result.stats["webspider/directives/noindex_exported_count"] == 1


def source_site(server) -> None:
    server.add(
        "/",
        html('<a href="/meta">m</a><a href="/header">h</a><a href="/rel">r</a>'),
    )
    server.add(
        "/meta",
        html('<a href="/bomb-meta">x</a>', head='<meta name="robots" content="none">'),
    )
    server.add(
        "/header",
        Page(html('<a href="/bomb-header">x</a>'), headers=[("X-Robots-Tag", "none")]),
    )
    server.add("/rel", html('<a href="/bomb-rel" rel="nofollow">x</a>'))


@pytest.mark.parametrize(
    ("settings", "args", "followed"),
    [
        ({}, {}, set()),
        ({"WEBSPIDER_DIRECTIVES_META": False}, {}, {"meta"}),
        ({"WEBSPIDER_DIRECTIVES_HEADER": "0"}, {}, {"header"}),
        ({"WEBSPIDER_DIRECTIVES_REL": "false"}, {}, {"rel"}),
        ({}, {"robots": "0"}, {"meta", "header", "rel"}),
        ({"WEBSPIDER_DIRECTIVES_ENABLED": False}, {}, {"meta", "header", "rel"}),
    ],
)
@deferred_f_from_coro_f
async def test_each_source_can_be_switched_off(
    tmp_path, server, settings, args, followed
):
    source_site(server)
    result = await crawl(
        tmp_path, start_urls=server.url("/"), settings=settings, **args
    )
    requested = server.requested_pages()
    assert {p[len("/bomb-") :] for p in requested if p.startswith("/bomb-")} == followed
    exported = {row["url"] for row in result.exported()}
    # noindex (from "none") is switched off with its source too
    assert (server.url("/meta") in exported) == ("meta" in followed)
    assert (server.url("/header") in exported) == ("header" in followed)


@deferred_f_from_coro_f
async def test_failing_pages_are_noindex_and_nofollow(tmp_path, server):
    server.add("/", html('<a href="/gone">g</a><a href="/broken">b</a>'))
    server.add("/gone", Page(html('<a href="/bomb-404">x</a>'), status=404))
    server.add("/broken", Page(html('<a href="/bomb-500">x</a>'), status=500))

    # even when the error responses are handed to the spider
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={"HTTPERROR_ALLOWED_CODES": [404, 500]},
    )

    requested = server.requested_pages()
    assert "/gone" in requested
    assert "/broken" in requested
    assert [p for p in requested if p.startswith("/bomb")] == []
    assert {row["url"] for row in result.exported()} == {server.url("/")}
    assert result.stats["webspider/directives/nofollow_count/error"] == 2
    assert result.stats["webspider/directives/noindex_count/error"] == 2


@deferred_f_from_coro_f
async def test_requests_a_users_callback_yields_are_filtered_too(tmp_path, server):
    class MySpider(WebSpider):
        def parse(self, response, **kwargs):
            yield from super().parse(response, **kwargs)
            if response.url.endswith("/"):
                return
            path = response.url.rsplit("/", 1)[1]
            yield response.follow(f"/extra-{path}", callback=self.parse)
            yield response.follow(f"/nf-{path}", callback=self.parse)

    server.add("/", html('<a href="/plain">p</a><a href="/closed">c</a>'))
    server.add("/plain", html('<a href="/nf-plain" rel="nofollow">x</a>'))
    server.add(
        "/closed", html("closed", head='<meta name="robots" content="nofollow">')
    )

    result = await crawl(tmp_path, MySpider, start_urls=server.url("/"))

    requested = server.requested_pages()
    assert "/extra-plain" in requested
    assert "/nf-plain" not in requested  # rel=nofollow on the page
    assert "/extra-closed" not in requested
    assert "/nf-closed" not in requested
    stats = result.stats
    assert stats["webspider/skipped/url_count/nofollow"] == 2
    assert stats["webspider/skipped/url_count/nofollow_link"] == 2


@deferred_f_from_coro_f
async def test_meta_refresh_is_a_link(tmp_path, server):
    refresh = '<meta http-equiv="refresh" content="{}">'
    server.add(
        "/",
        html(
            '<a href="/self">s</a><a href="/hidden">h</a><a href="/closed">c</a>',
            head=refresh.format("0; url=/target"),
        ),
    )
    server.add("/target", html("here", title="Target"))
    server.add("/self", html("again", head=refresh.format("5")))  # to itself
    server.add("/self2", html("again", head=refresh.format("1;URL='/self2'")))
    server.add(
        "/hidden",
        html(
            f"<noscript>{refresh.format('0; url=/bomb-noscript')}</noscript>"
            '<a href="/self2">s</a>'
        ),
    )
    server.add(
        "/closed",
        html(
            "x",
            head=refresh.format("0; url=/bomb-refresh")
            + '<meta name="robots" content="nofollow">',
        ),
    )

    await crawl(tmp_path, start_urls=server.url("/"))

    requested = server.requested_pages()
    assert requested.count("/target") == 1
    assert requested.count("/self") == 1
    assert requested.count("/self2") == 1
    assert [p for p in requested if p.startswith("/bomb")] == []
