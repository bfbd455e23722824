"""An internationalised host name and its punycode form are one host: in
scope, in the seen-set, in include/exclude prefixes and for robots.txt,
whichever form the start URL and the links are written in."""

from __future__ import annotations

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, TestServer, html

PUNY = "xn--bcher-kva.test"


@deferred_f_from_coro_f
async def test_unicode_start_url_crawls_its_punycode_links(tmp_path):
    # The test resolver sends every *.test name, xn--bcher-kva.test
    # included, to 127.0.0.1.
    with TestServer(name="bücher.test") as server:
        port = server.port
        puny = f"http://{PUNY}:{port}"
        server.add(
            "/",
            html(
                f'<a href="{puny}/a">punycode</a>'
                f'<a href="http://BÜCHER.test:{port}/b">unicode</a>'
                '<a href="/c">relative</a>'
                f'<a href="http://bücher.test:{port}/a">a again</a>'
                f'<a href="http://bücher.test:{port}/private/x">robots</a>'
                f'<a href="{puny}/out/x">excluded</a>'
            ),
        )
        for path in ("/a", "/b", "/c"):
            server.add(path, html(f'<a href="{puny}/">home</a>'))
        server.add(
            "/robots.txt",
            Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
        )
        result = await crawl(
            tmp_path,
            start_urls=server.url("/"),  # http://bücher.test:<port>/
            include=f"http://bücher.test:{port}/",
            exclude=f"{puny}/out/",
            log_skipped="1",
        )
        seen = list(server.log)
    assert sorted(r.path for r in seen) == ["/", "/a", "/b", "/c", "/robots.txt"]
    assert {r.headers["Host"] for r in seen} == {f"{PUNY}:{port}"}
    assert sorted(item["url"] for item in result.items) == [
        f"{puny}{path}" for path in ("/", "/a", "/b", "/c")
    ]
    reasons = {r["url"]: r["reason"] for r in result.exported("skipped.jsonl")}
    assert reasons == {  # as requested: Scrapy writes the host in punycode
        f"{puny}/private/x": "robots",
        f"{puny}/out/x": "exclude",
    }


@deferred_f_from_coro_f
async def test_punycode_start_url_keeps_unicode_subdomains_in_domain_scope(tmp_path):
    with TestServer(name=PUNY) as server:
        port = server.port
        server.add(
            "/",
            html(
                f'<a href="http://www.bücher.test:{port}/w">subdomain</a>'
                f'<a href="http://bucher.test:{port}/elsewhere">another domain</a>'
            ),
        )
        server.add("/w", html("w"))
        result = await crawl(
            tmp_path, start_urls=server.url("/"), scope="domain", log_skipped="1"
        )
        seen = [(r.headers["Host"], r.path) for r in server.log]
    assert sorted(seen) == [
        (f"www.{PUNY}:{port}", "/robots.txt"),
        (f"www.{PUNY}:{port}", "/w"),
        (f"{PUNY}:{port}", "/"),
        (f"{PUNY}:{port}", "/robots.txt"),
    ]
    reasons = {r["url"]: r["reason"] for r in result.exported("skipped.jsonl")}
    assert reasons == {f"http://bucher.test:{port}/elsewhere": "scope"}
