"""Issue 15, finding 2: credentials stay with their origin, a start URL's
``user:password@`` works and is written nowhere, and other origins get the
origin as Referer, not the page.

The servers record every request's headers: the assertions are on what
each of them was sent."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.cli import run_crawl
from tests.support.crawl import crawl
from tests.support.server import Page, SeenRequest, TestServer, html

CREDENTIALS = ("Authorization", "Cookie", "Proxy-Authorization")


@pytest.fixture
def other_port() -> Iterator[TestServer]:
    """The start URL's host on another port: another origin."""
    with TestServer(name="site.test") as srv:
        yield srv


def credentials_sent(server: TestServer) -> list[tuple[str, str]]:
    """(path, header) of every credential header the server received."""
    return [
        (seen.path, name)
        for seen in server.log
        for name in seen.headers
        if name.title() in CREDENTIALS
    ]


def link_everywhere(server: TestServer, other: TestServer, port: TestServer) -> None:
    # www.site.test resolves to 127.0.0.1 too: the same server, another origin
    server.add(
        "/",
        html(
            '<a href="/a">same origin</a>'
            f'<a href="{other.url("/x")}">other host</a>'
            f'<a href="http://www.site.test:{server.port}/w">subdomain</a>'
            '<a href="/to-port">redirect to another port</a>'
            '<a href="/to-host">redirect to another host</a>'
        ),
    )
    server.add("/a", html("a"))
    server.add("/w", html("w"))
    server.add("/to-port", Page(status=302, headers=[("Location", port.url("/y"))]))
    server.add("/to-host", Page(status=302, headers=[("Location", other.url("/z"))]))
    for srv, path in ((other, "/x"), (port, "/y"), (other, "/z")):
        srv.add(path, html(path))


def credential_settings(source: str, server: TestServer) -> dict[str, object]:
    if source == "default-headers":
        return {
            "DEFAULT_REQUEST_HEADERS": {
                "Authorization": "Bearer t0ken",
                "Cookie": "session=c00kie",
                "Proxy-Authorization": "Basic cHJveHk6cHc=",
                "Accept": "*/*",
            }
        }
    auth = {"HTTPAUTH_USER": "alice", "HTTPAUTH_PASS": "pw"}
    if source == "httpauth-everywhere":  # Scrapy's HttpAuthMiddleware, told so
        return {**auth, "HTTPAUTH_DOMAIN": None}
    # … or told the domain: Scrapy sends them to its subdomains too
    return {**auth, "HTTPAUTH_DOMAIN": f"site.test:{server.port}"}


@pytest.mark.parametrize(
    "source", ["default-headers", "httpauth-everywhere", "httpauth-domain"]
)
@deferred_f_from_coro_f
async def test_credentials_go_only_to_their_origin(
    tmp_path, server, other_server, other_port, source
):
    # (HttpProxyMiddleware drops a Proxy-Authorization without a proxy)
    expected = (
        {"Authorization", "Cookie"}
        if source == "default-headers"
        else {"Authorization"}
    )
    link_everywhere(server, other_server, other_port)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        scope="all",
        settings=credential_settings(source, server),
    )
    origin = f"site.test:{server.port}"
    own = [seen for seen in server.log if seen.headers["Host"] == origin]
    subdomain = [seen for seen in server.log if seen.headers["Host"] != origin]
    # the origin's own requests all have them, robots.txt included
    assert sorted(seen.path for seen in own) == [
        "/",
        "/a",
        "/robots.txt",
        "/to-host",
        "/to-port",
    ]
    for seen in own:
        assert expected <= {name.title() for name in seen.headers}, seen.path
    # the subdomain, the other host and the other port were requested, but
    # got no credentials
    assert sorted(seen.path for seen in subdomain) == ["/robots.txt", "/w"]
    assert sorted(other_server.requested_pages()) == ["/x", "/z"]
    assert other_port.requested_pages() == ["/y"]
    for seen in subdomain + other_server.log + other_port.log:
        assert not {name.title() for name in seen.headers} & set(CREDENTIALS), seen
    assert result.stats["webspider/credentials/removed_count/authorization"] > 0


def test_a_start_url_with_user_and_password(tmp_path, server, other_server):
    user, password = "alice", "s3cret-Pw"
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    home = html(
        '<a href="/a">a</a><a href="/missing">gone</a>'
        f'<a href="{other_server.url("/x")}">elsewhere</a>',
        title="Home",
    )

    def only_with_credentials(page: Page):
        def route(seen: SeenRequest) -> Page:
            if seen.headers.get("Authorization") != f"Basic {token}":
                return Page("who?", status=401, headers=[("WWW-Authenticate", "Basic")])
            return page

        return route

    server.add("/", only_with_credentials(Page(home)))
    server.add("/a", only_with_credentials(Page(html("a", title="A"))))
    other_server.add("/x", html("x"))
    out = tmp_path / "out"
    proc = run_crawl(
        "-a",
        f"start_urls=http://{user}:{password}@site.test:{server.port}/",
        "-a",
        "scope=all",
        "-a",
        "log_skipped=1",
        "-a",
        f"output={out}",
        "-s",
        "LOG_LEVEL=DEBUG",
    )
    assert proc.returncode == 0, proc.stderr
    # the origin is crawled with the credentials, every request of it
    assert sorted(server.requested()) == ["/", "/a", "/missing", "/robots.txt"]
    assert {seen.headers.get("Authorization") for seen in server.log} == {
        f"Basic {token}"
    }
    pages = [
        json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()
    ]
    assert sorted(page["url"] for page in pages) == sorted(
        [server.url("/"), server.url("/a"), other_server.url("/x")]
    )
    # … and no other origin gets them, nor a Referer holding them
    assert credentials_sent(other_server) == []
    referers = {seen.headers.get("Referer") for seen in other_server.log}
    assert referers == {None, server.url("/")}  # robots.txt has none
    # the password is in no output file and no log line
    for secret in (password, token):
        assert secret not in proc.stderr + proc.stdout
        for path in out.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
    shown = f"http://{user}:***@site.test:{server.port}/"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["start_urls"] == [shown]
    assert shown in (out / "report.html").read_text()
    broken = [
        json.loads(line)
        for line in (out / "broken-links.jsonl").read_text().splitlines()
    ]
    assert [(b["url"], b["referrers"][0]["url"]) for b in broken] == [
        (server.url("/missing"), server.url("/"))
    ]


@deferred_f_from_coro_f
async def test_other_origins_get_the_origin_as_referer(tmp_path, server, other_server):
    server.add(
        "/docs/index.html",
        html(
            '<a href="/docs/a?q=1">same</a>'
            f'<a href="{other_server.url("/b")}">other</a>'
        ),
    )
    server.add("/docs/a", html("a"))
    other_server.add("/b", html("b"))
    await crawl(tmp_path, start_urls=server.url("/docs/index.html"), scope="all")
    referers = {seen.path: seen.headers.get("Referer") for seen in server.log}
    assert referers["/docs/a?q=1"] == server.url("/docs/index.html")
    (seen,) = [seen for seen in other_server.log if seen.path == "/b"]
    assert seen.headers.get("Referer") == server.url("/")
