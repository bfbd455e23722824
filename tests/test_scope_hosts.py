import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from webspider.scope.hosts import HostScope, registered_domain
from webspider.scope.middleware import ScopeMiddleware
from webspider.spiders.webspider import WebSpider


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("a.b.example.org", "example.org"),
        ("example.org", "example.org"),
        ("Docs.Python.ORG.", "python.org"),
        ("127.0.0.1", "127.0.0.1"),
        ("sub.site.test", "site.test"),
        ("localhost", "localhost"),
    ],
)
def test_registered_domain(host, domain):
    assert registered_domain(host) == domain


@pytest.mark.parametrize(
    ("scope", "host", "allowed"),
    [
        ("host", "www.site.test", True),
        ("host", "WWW.SITE.TEST", True),
        ("host", "site.test", False),
        ("host", "other.test", False),
        ("domain", "site.test", True),
        ("domain", "a.b.site.test", True),
        ("domain", "evilsite.test", False),
        ("domain", "site.test.evil.test", False),
        ("all", "anything.example", True),
    ],
)
def test_host_scope(scope, host, allowed):
    assert HostScope(scope, {"www.site.test"}).allows(host) is allowed


@pytest.mark.parametrize(
    ("scope", "seed", "host", "allowed"),
    [
        ("host", "bücher.test", "xn--bcher-kva.test", True),
        ("host", "xn--bcher-kva.test", "BÜCHER.test", True),
        ("host", "bücher.test", "bucher.test", False),
        ("domain", "www.bücher.test", "shop.xn--bcher-kva.test", True),
        ("domain", "www.xn--bcher-kva.test", "shop.bücher.test", True),
        ("domain", "www.пример.рф", "a.xn--e1afmkfd.xn--p1ai", True),
        ("domain", "www.пример.рф", "xn--p1ai", False),
    ],
)
def test_host_scope_compares_idn_hosts_in_one_form(scope, seed, host, allowed):
    assert HostScope(scope, {seed}).allows(host) is allowed


def middleware(**settings):
    crawler = get_crawler(
        WebSpider, {"WEBSPIDER_START_URLS": "http://www.site.test/", **settings}
    )
    return build_from_crawler(ScopeMiddleware, crawler), crawler


def test_middleware_drops_and_counts_out_of_scope_requests():
    mw, crawler = middleware()
    assert mw.process_request(Request("http://www.site.test:8080/x")) is None
    with pytest.raises(IgnoreRequest):
        mw.process_request(Request("http://other.test/"))
    assert (
        mw.process_request(Request("http://other.test/", meta={"allow_offsite": True}))
        is None
    )
    assert crawler.stats.get_value("webspider/skipped/url_count/scope") == 1


def test_scope_all_disables_the_middleware():
    with pytest.raises(NotConfigured):
        middleware(WEBSPIDER_SCOPE="all")


@pytest.mark.parametrize("scope", ["host", "all"])
def test_only_scope_domain_loads_the_public_suffix_list(monkeypatch, scope):
    # its first lookup costs ~50 ms of every crawl's start-up
    def no_lookup(host):
        raise AssertionError(f"looked up {host}")

    monkeypatch.setattr("webspider.scope.hosts.registered_domain", no_lookup)
    assert HostScope(scope, {"www.site.test"}).allows("www.site.test")
