"""The credentials middleware in isolation."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from webspider.config import ConfigError, CrawlConfig, get_start_credentials
from webspider.credentials.middleware import CredentialsMiddleware
from webspider.credentials.options import CredentialsOptions

CREDENTIALS = {
    "Authorization": "Bearer t",
    "Cookie": "a=b",
    "Proxy-Authorization": "Basic cDpw",
}


def middleware(**settings: object) -> CredentialsMiddleware:
    crawler = get_crawler(
        Spider,
        {
            "WEBSPIDER_START_URLS": "https://x.org/docs/",
            "COOKIES_ENABLED": False,  # webspider's default
            **settings,
        },
    )
    crawler.spider = Spider("test")
    return build_from_crawler(CredentialsMiddleware, crawler)


def sent(mw: CredentialsMiddleware, url: str, **meta: object) -> set[str]:
    request = Request(url, headers=CREDENTIALS, meta=meta)
    assert mw.process_request(request) is None
    return {name.decode() for name in request.headers} & set(CREDENTIALS)


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://x.org/docs/a", set(CREDENTIALS)),
        ("https://X.ORG:443/other/", set(CREDENTIALS)),
        ("http://x.org/docs/a", set()),  # another scheme
        ("https://x.org:8443/docs/a", set()),  # another port
        ("https://www.x.org/docs/a", set()),  # another host
        ("https://y.org/", set()),
    ],
)
def test_credentials_stay_with_the_start_urls_origin(url, kept):
    assert sent(middleware(), url) == kept


def test_a_proxys_credentials_go_with_requests_through_it():
    mw = middleware()
    assert sent(mw, "https://y.org/", proxy="http://proxy:3128") == {
        "Proxy-Authorization"
    }
    assert mw.crawler.stats.get_value(
        "webspider/credentials/removed_count/authorization"
    )


def test_the_cookie_jar_owns_the_cookie_header():
    assert sent(middleware(COOKIES_ENABLED=True), "https://y.org/") == {"Cookie"}


def test_more_origins_can_be_given():
    mw = middleware(WEBSPIDER_CREDENTIALS_ORIGINS="https://docs.x.org,y.org:8443")
    assert sent(mw, "https://docs.x.org/a") == set(CREDENTIALS)
    assert sent(mw, "https://y.org:8443/") == set(CREDENTIALS)
    assert sent(mw, "https://y.org/") == set()
    with pytest.raises(ConfigError, match="WEBSPIDER_CREDENTIALS_ORIGINS: invalid"):
        middleware(WEBSPIDER_CREDENTIALS_ORIGINS="ftp://x.org/")


def test_a_start_urls_user_and_password_are_its_origins_basic_auth():
    mw = middleware(
        WEBSPIDER_START_URLS="https://al%20ice:p%40ss:word@x.org/docs/,https://y.org/"
    )
    request = Request("https://x.org/docs/a")
    mw.process_request(request)
    # "al ice:p@ss:word", base64
    assert request.headers[b"Authorization"] == b"Basic YWwgaWNlOnBAc3M6d29yZA=="
    explicit = Request("https://x.org/a", headers={"Authorization": "Bearer t"})
    mw.process_request(explicit)
    assert explicit.headers[b"Authorization"] == b"Bearer t"  # yours wins
    elsewhere = Request("https://y.org/")
    mw.process_request(elsewhere)
    assert b"Authorization" not in elsewhere.headers


def test_start_urls_are_requested_and_shown_without_the_password():
    crawler = get_crawler(
        Spider,
        {"WEBSPIDER_START_URLS": "http://alice:s3cret@x.org:8080/a,https://y.org/"},
    )
    config = CrawlConfig.from_settings(crawler.settings)
    assert config.start_urls == ("http://x.org:8080/a", "https://y.org/")
    assert config.shown_start_urls == (
        "http://alice:***@x.org:8080/a",
        "https://y.org/",
    )
    assert get_start_credentials(crawler.settings) == {
        ("http", "x.org", 8080): ("alice", "s3cret")
    }


def test_off_means_off_and_says_what_it_does_not_send(caplog):
    with pytest.raises(NotConfigured):
        middleware(
            WEBSPIDER_CREDENTIALS_ENABLED=False,
            WEBSPIDER_START_URLS="https://alice:pw@x.org/",
        )
    assert "user:password of start URLs is not sent" in caplog.text
    crawler = get_crawler(Spider, {"WEBSPIDER_START_URLS": "https://x.org/"})
    assert CredentialsOptions.of(crawler.settings).origins == {("https", "x.org", 443)}
