"""One crawl's address policy: what it refuses, and what it has learnt.

The guard judges the addresses a host name resolved to (for the address
middleware's check before a request goes out, and for every connection, see
webspider.addresses.resolver), remembers each host's verdict (so a request
costs a dictionary lookup, not a DNS lookup) and the addresses the start
URLs resolve to (allowed, so crawling your own intranet site or
``localhost`` works).

Those start addresses are learnt when a start URL's host is resolved, which
is before anything else of the crawl in practice (its robots.txt comes
first); and before refusing any address the guard resolves the start hosts
it has not resolved yet, so the answer never depends on that order.

Stats: ``webspider/addresses/lookup_count`` (host names the middleware
resolved: one per host), ``…/refused_host_count`` (hosts refused),
``…/refused_connection_count`` (connections refused when they resolved,
after the middleware let their request through: a name whose answer
changed).
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.utils.datatypes import LocalCache
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredList, succeed

from webspider.addresses.dns import NameResolver, address_of, name_key, resolve
from webspider.addresses.options import AddressOptions
from webspider.addresses.policy import (
    AddressPolicy,
    IPAddress,
    parse_host_address,
    reached,
)
from webspider.config import get_start_urls
from webspider.utils.url import host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.interfaces import IAddress

logger = logging.getLogger(__name__)

STATS_LOOKUPS = "webspider/addresses/lookup_count"
STATS_REFUSED_HOSTS = "webspider/addresses/refused_host_count"
STATS_REFUSED_CONNECTIONS = "webspider/addresses/refused_connection_count"

UNKNOWN = object()

#: host verdicts kept (the oldest are forgotten beyond, and looked up again)
MAX_HOSTS = 100_000


@dataclass(frozen=True)
class Refusal:
    """Why a host is refused: the first of its addresses the policy refused."""

    host: str
    address: IPAddress
    #: loopback, private, link-local, cgnat, multicast, reserved, unspecified
    category: str

    def __str__(self) -> str:
        return f"{self.host} is {self.address}, a {self.category} address"


#: the guards of the crawls running in this process
_open_guards: weakref.WeakSet[AddressGuard] = weakref.WeakSet()
_guards: weakref.WeakKeyDictionary[Crawler, AddressGuard] = weakref.WeakKeyDictionary()


class AddressGuard:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.policy = AddressPolicy(AddressOptions.of(crawler.settings).allowed)
        #: addresses the start URLs are or resolve to
        self.exempt: set[IPAddress] = set()
        names: set[str] = set()
        for url in get_start_urls(crawler.settings):
            host = host_of(url)
            address = parse_host_address(host)
            if address is None:
                names.add(name_key(host))
            else:
                self.exempt.update({address, reached(address)})
        #: start URL hosts that are names (whatever they resolve to is allowed)
        self.start_names = frozenset(names)
        self._unresolved = set(names)
        self._start_waiters: list[Deferred[None]] = []
        #: host (name_key) → its Refusal, or None when allowed
        self.verdicts: LocalCache[str, Refusal | None] = LocalCache(MAX_HOSTS)
        self._refused_hosts: set[str] = set()
        #: hosts being looked up → requests waiting for the same verdict
        self._pending: dict[str, list[Deferred[Refusal | None]]] = {}

    @classmethod
    def of(cls, crawler: Crawler) -> AddressGuard:
        """The crawl's guard (the middleware and the handler share it)."""
        guard = _guards.get(crawler)
        if guard is None:
            guard = _guards[crawler] = cls(crawler)
            _open_guards.add(guard)
            crawler.signals.connect(guard.close, signal=signals.engine_stopped)
        return guard

    def close(self) -> None:
        _open_guards.discard(self)

    # -- judging ----------------------------------------------------------------------
    def refusal(self, host: str, address: IPAddress) -> Refusal | None:
        category = self.policy.refusal(address, self.exempt)
        return None if category is None else Refusal(host, address, category)

    def judge(
        self, name: str, addresses: list[IAddress], resolver: NameResolver
    ) -> Deferred[tuple[list[IAddress], Refusal | None]]:
        """The addresses ``name`` resolved to that may be connected to, and
        when none may, why (the first refused)."""
        key = name_key(name)
        if key in self.start_names:
            self._unresolved.discard(key)
            self._learn(addresses)
            return succeed((addresses, None))
        allowed, refusal = self._split(key, addresses)
        if len(allowed) == len(addresses) or not self._unresolved:
            return succeed((allowed, refusal))
        # about to withhold an address: it may be a start URL's
        return self.learn_start_addresses(resolver).addCallback(
            lambda _: self._split(key, addresses)
        )

    def _split(
        self, host: str, addresses: list[IAddress]
    ) -> tuple[list[IAddress], Refusal | None]:
        allowed: list[IAddress] = []
        first: Refusal | None = None
        for address in addresses:
            ip = address_of(address)
            if ip is None:
                continue  # not an IP address: nothing TCP connects to
            refusal = self.refusal(host, ip)
            if refusal is None:
                allowed.append(address)
            elif first is None:
                first = refusal
        return allowed, (first if not allowed else None)

    def learn_start_addresses(self, resolver: NameResolver) -> Deferred[None]:
        """Resolve the start hosts not resolved yet (once): their addresses
        are allowed."""
        waiter: Deferred[None] = Deferred()
        self._start_waiters.append(waiter)
        if len(self._start_waiters) == 1:
            names = sorted(self._unresolved)
            lookups = DeferredList(
                [resolve(resolver, name) for name in names], consumeErrors=True
            )
            lookups.addCallback(self._learnt, names)
        return waiter

    def _learnt(self, results: list[tuple[bool, Any]], names: list[str]) -> None:
        for name, (ok, addresses) in zip(names, results, strict=True):
            self._unresolved.discard(name)
            if ok:
                self._learn(addresses)
        waiters, self._start_waiters = self._start_waiters, []
        for waiter in waiters:
            waiter.callback(None)

    def _learn(self, addresses: list[IAddress]) -> None:
        for address in addresses:
            ip = address_of(address)
            if ip is not None:
                self.exempt.update({ip, reached(ip)})

    def known_verdict(self, host: str) -> Refusal | object | None:
        """The host's verdict if known (a Refusal or None), else UNKNOWN."""
        return self.verdicts.get(name_key(host), UNKNOWN)

    async def check_host(self, host: str, resolver: NameResolver) -> Refusal | None:
        """The verdict on a URL's host: an address written in the URL is
        judged as it is, a name by what it resolves to (looked up once per
        host; the connection's own resolution is judged again)."""
        key = name_key(host)
        verdict = self.verdicts.get(key, UNKNOWN)
        if verdict is not UNKNOWN:
            return verdict  # type: ignore[return-value]
        waiters = self._pending.get(key)
        if waiters is not None:  # the same host, being looked up already
            waiter: Deferred[Refusal | None] = Deferred()
            waiters.append(waiter)
            return await maybe_deferred_to_future(waiter)
        self._pending[key] = waiters = []
        try:
            refusal = await self._check_host(key, host, resolver)
        except Exception as exc:
            for waiter in waiters:
                waiter.errback(exc)
            raise
        finally:
            del self._pending[key]
        for waiter in waiters:
            waiter.callback(refusal)
        return refusal

    async def _check_host(
        self, key: str, host: str, resolver: NameResolver
    ) -> Refusal | None:
        address = parse_host_address(host)
        if address is not None:
            refusal = self.refusal(key, address)
            if refusal is not None and self._unresolved:
                await maybe_deferred_to_future(self.learn_start_addresses(resolver))
                refusal = self.refusal(key, address)
        else:
            self.count_lookup()
            addresses = await maybe_deferred_to_future(resolve(resolver, host))
            _, refusal = await maybe_deferred_to_future(
                self.judge(host, addresses, resolver)
            )
        self.verdicts[key] = refusal
        if refusal is not None:
            self.refused(refusal)
        return refusal

    # -- what was decided --------------------------------------------------------------
    def refused(self, refusal: Refusal, *, connection: bool = False) -> None:
        """Remember and count a refusal; ``connection``: when it was
        made as the connection resolved its host."""
        self.verdicts[refusal.host] = refusal
        stats = self.crawler.stats
        if connection and stats is not None:
            stats.inc_value(STATS_REFUSED_CONNECTIONS)
        if refusal.host in self._refused_hosts:
            return
        self._refused_hosts.add(refusal.host)
        if stats is not None:
            stats.inc_value(STATS_REFUSED_HOSTS)
        logger.debug(
            "Address policy: not connecting to %s (WEBSPIDER_ADDRESSES_ALLOW "
            "allows networks)",
            refusal,
        )

    def count_lookup(self) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_LOOKUPS)


def open_guards() -> list[AddressGuard]:
    return list(_open_guards)
