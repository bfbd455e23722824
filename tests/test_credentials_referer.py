"""webspider.credentials.referer: the Referer kept per page and origin is
the one Scrapy's RefererMiddleware sets, for every policy, page and link."""

from __future__ import annotations

import itertools

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.spidermiddlewares.referer import DefaultReferrerPolicy
from scrapy.spidermiddlewares.referer import RefererMiddleware as ScrapyReferer

from webspider.credentials.referer import RefererMiddleware

PAGES = (
    "http://example.org/docs/a?q=1#top",
    "https://user:pw@example.org:443/docs/b",
    "https://example.org:8443/c",
    "http://example.org:80/",
)
LINKS = (
    "http://example.org/x",
    "http://example.org:80/y?z=1",
    "http://example.org:8080/x",
    "https://example.org/x#f",
    "https://example.org:443/other",
    "https://example.org:8443/c2",
    "https://user@example.org/x",
    "http://other.example/x",
    "https://other.example/",
    "ftp://example.org/file",
    "http://example.org",
    "http://example.org?q",
)
POLICIES = (
    "strict-origin-when-cross-origin",
    "no-referrer",
    "no-referrer-when-downgrade",
    "same-origin",
    "origin",
    "strict-origin",
    "origin-when-cross-origin",
    "unsafe-url",
    "scrapy-default",
)


def referers(mw: ScrapyReferer, page: HtmlResponse, meta: dict) -> list:
    out = []
    for link in LINKS:
        request = Request(link, meta=dict(meta))
        done = mw.get_processed_request(request, page)
        assert done is request
        out.append(request.headers.get("Referer"))
    return out


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("header", [None, "no-referrer", "unsafe-url", "origin"])
def test_same_referer_as_scrapy(policy: str, header: str | None) -> None:
    settings = Settings({"REFERRER_POLICY": policy})
    ours, scrapys = RefererMiddleware(settings), ScrapyReferer(settings)
    for url, meta in itertools.product(PAGES, ({}, {"referrer_policy": "origin"})):
        headers = {"Referrer-Policy": header} if header else {}
        page = HtmlResponse(url, body=b"", headers=headers)
        expected = referers(scrapys, page, meta)
        # twice: the second time from what was kept for the page
        assert referers(ours, page, meta) == expected
        assert referers(ours, page, meta) == expected
        assert any(expected) or policy == "no-referrer" or header or meta


class WholeUrlPolicy(DefaultReferrerPolicy):
    """A policy of the user's that reads the link's path."""

    def referrer(self, response_url: str, request_url: str) -> str | None:
        return request_url.rsplit("/", 1)[-1] or None


def test_a_policy_of_its_own_reads_every_link() -> None:
    settings = Settings({"REFERRER_POLICY": f"{__name__}.WholeUrlPolicy"})
    mw = RefererMiddleware(settings)
    page = HtmlResponse("http://example.org/", body=b"")
    got = [
        mw.get_processed_request(Request(f"http://example.org/{name}"), page)
        for name in ("a", "b")
    ]
    assert [r.headers.get("Referer") for r in got if r] == [b"a", b"b"]


def test_a_page_kept_is_let_go() -> None:
    mw = RefererMiddleware(Settings())
    page = HtmlResponse("http://example.org/", body=b"")
    mw.get_processed_request(Request("http://example.org/a"), page)
    assert len(mw._pages) == 1
    del page
    assert len(mw._pages) == 0
