"""The guard and the resolver that applies it to connections, in isolation
(a fake inner resolver: a name table)."""

from __future__ import annotations

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler
from twisted.internet.address import IPv4Address, IPv6Address

from webspider.addresses.guard import AddressGuard
from webspider.addresses.options import HANDLER, AddressOptions
from webspider.addresses.resolver import TICKET, GuardResolver, Ticket
from webspider.config import ConfigError

HANDLERS = {"http": HANDLER, "https": HANDLER}


class NameTable:
    """An inner resolver answering from a table, recording what it was asked."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    def resolveHostName(
        self,
        receiver,
        hostName,
        portNumber=0,
        addressTypes=None,
        transportSemantics="TCP",
    ):
        self.asked.append(hostName)
        receiver.resolutionBegan(None)
        for host in self.table.get(hostName, []):
            kind = IPv6Address if ":" in host else IPv4Address
            receiver.addressResolved(kind("TCP", host, portNumber))
        receiver.resolutionComplete()
        return receiver


class Collected:
    def __init__(self) -> None:
        self.began = False
        self.addresses: list[str] = []
        self.complete = False

    def resolutionBegan(self, resolution) -> None:
        self.began = True

    def addressResolved(self, address) -> None:
        self.addresses.append(address.host)

    def resolutionComplete(self) -> None:
        self.complete = True


def make_guard(start_urls: str, **settings: object) -> AddressGuard:
    crawler = get_crawler(
        Spider,
        {"WEBSPIDER_START_URLS": start_urls, "DOWNLOAD_HANDLERS": HANDLERS, **settings},
    )
    guard = AddressGuard.of(crawler)
    return guard


@pytest.fixture
def table() -> NameTable:
    return NameTable(
        {
            "intranet.example": ["10.0.0.5"],
            "www.example": ["93.184.216.34"],
            "mixed.example": ["127.0.0.1", "93.184.216.35"],
            "evil.example": ["10.0.0.5", "127.0.0.2"],
            "metadata.example": ["::ffff:169.254.169.254"],
            "proxy.corp": ["10.9.9.9"],
        }
    )


def resolve(resolver: GuardResolver, name: str, ticket: Ticket | None) -> Collected:
    got = Collected()
    token = TICKET.set(ticket)
    try:
        resolver.resolveHostName(got, name, 80)
    finally:
        TICKET.reset(token)
    assert got.began and got.complete
    return got


def test_a_connection_gets_only_the_allowed_addresses(table):
    guard = make_guard("https://www.example/")
    resolver = GuardResolver(table)
    try:
        assert resolve(
            resolver, "www.example", Ticket(guard, "www.example")
        ).addresses == ["93.184.216.34"]
        # public and private: only the public one is connected to
        ticket = Ticket(guard, "mixed.example")
        assert resolve(resolver, "mixed.example", ticket).addresses == ["93.184.216.35"]
        assert ticket.refusal is None
        # nothing allowed: nothing to connect to, and the ticket says why
        ticket = Ticket(guard, "evil.example")
        assert resolve(resolver, "evil.example", ticket).addresses == []
        assert str(ticket.refusal) == "evil.example is 10.0.0.5, a private address"
        assert guard.known_verdict("evil.example") == ticket.refusal
        ticket = Ticket(guard, "metadata.example")
        assert resolve(resolver, "metadata.example", ticket).addresses == []
        assert ticket.refusal.category == "link-local"
    finally:
        guard.close()


def test_the_start_urls_addresses_are_allowed_whoever_asks(table):
    guard = make_guard("http://intranet.example/,http://127.0.0.2:8000/")
    resolver = GuardResolver(table)
    try:
        # another name for the intranet's address: allowed, once the guard has
        # looked the start host up (which it does before refusing anything)
        ticket = Ticket(guard, "evil.example")
        assert resolve(resolver, "evil.example", ticket).addresses == [
            "10.0.0.5",
            "127.0.0.2",
        ]
        assert table.asked == ["evil.example", "intranet.example"]
        assert ticket.refusal is None
    finally:
        guard.close()


def test_a_proxy_is_connected_to_whatever_it_resolves_to(table):
    guard = make_guard("https://www.example/")
    resolver = GuardResolver(table)
    try:
        ticket = Ticket(guard, "www.example", proxy_host="proxy.corp")
        assert resolve(resolver, "proxy.corp", ticket).addresses == ["10.9.9.9"]
    finally:
        guard.close()


def test_without_a_ticket_every_open_crawl_judges(table):
    resolver = GuardResolver(table)
    assert resolve(resolver, "evil.example", None).addresses == [
        "10.0.0.5",
        "127.0.0.2",
    ]  # no crawl open: not the guard's business
    first = make_guard("http://intranet.example/")
    second = make_guard("https://www.example/")
    try:
        # the first crawl allows its intranet, the second does not
        assert resolve(resolver, "intranet.example", None).addresses == []
        # a ticket for another host than the one resolved is no ticket
        ticket = Ticket(first, "www.example")
        assert resolve(resolver, "intranet.example", ticket).addresses == []
        assert ticket.refusal is None
        second.close()
        assert resolve(resolver, "intranet.example", None).addresses == ["10.0.0.5"]
    finally:
        first.close()
        second.close()


def test_the_handler_must_be_webspiders():
    crawler = get_crawler(Spider, {"WEBSPIDER_START_URLS": "https://www.example/"})
    with pytest.raises(ConfigError, match=r"DOWNLOAD_HANDLERS\['http'\] is 'scrapy"):
        AddressOptions.from_settings(crawler.settings)
    crawler = get_crawler(Spider, {"WEBSPIDER_ADDRESSES_ENABLED": False})
    assert not AddressOptions.from_settings(crawler.settings).enabled
