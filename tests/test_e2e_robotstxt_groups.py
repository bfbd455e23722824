"""robots.txt groups as RFC 9309 reads them, against a real server: the
crawler's product token from a browser-style User-Agent, a group that other
lines run through, percent-encoded rules, a byte order mark cut short."""

from __future__ import annotations

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html

USER_AGENT = "Mozilla/5.0 (compatible; ExampleBot/0.1; +https://example.org/bot)"
ROBOTS = (
    # what is left of a byte order mark: skipped, the first line is read
    b"\xef\xbb"
    b"User-agent: ExampleBot\n"
    # neither ends the group: ExampleBot's rules are OtherBot's
    b"Crawl-delay: 0\n"
    b"Frobnicate: yes\n"
    b"User-agent: OtherBot\n"
    b"Disallow: /private/\n"
    b"Disallow: /search?u=https://other.test/\n"
    b"\n"
    # not ours: the browser's token in our User-Agent is not our name
    b"User-agent: Mozilla\n"
    b"Disallow: /mozilla-only\n"
    b"\n"
    # not ours either: we have a group of our own
    b"User-agent: *\n"
    b"Disallow: /star-only\n"
)
LINKS = [
    "/public",
    "/private/secret",
    "/search?u=https%3A%2F%2Fother.test%2F",
    "/mozilla-only",
    "/star-only",
]


@deferred_f_from_coro_f
async def test_our_group_survives_other_lines_and_matches_encoded_urls(
    tmp_path, server
):
    server.add("/", html("".join(f'<a href="{link}">x</a>' for link in LINKS)))
    for link in LINKS:
        server.add(link, html("page"))
    server.add("/robots.txt", Page(ROBOTS, content_type="text/plain"))
    result = await crawl(
        tmp_path,
        settings={"USER_AGENT": USER_AGENT},
        start_urls=server.url("/"),
        log_skipped="1",
    )
    assert sorted(server.requested()) == [
        "/",
        "/mozilla-only",
        "/public",
        "/robots.txt",
        "/star-only",
    ]
    assert {r.headers["User-Agent"] for r in server.log} == {USER_AGENT}
    reasons = {r["url"]: r["reason"] for r in result.exported("skipped.jsonl")}
    assert reasons == {
        server.url("/private/secret"): "robots",
        server.url("/search?u=https%3A%2F%2Fother.test%2F"): "robots",
    }
