"""The address policy where connections are made: the reactor's resolver.

Twisted connects a request only to addresses its name resolver hands over
(``HostnameEndpoint`` resolves, then connects to exactly those addresses;
``connectTCP`` with a name resolves the same way). ``GuardResolver`` wraps
whatever resolver is installed (Scrapy's ``TWISTED_DNS_RESOLVER``, the
tests' name table) and hands over only the addresses the crawl's guard
allows: a refused address never receives a TCP connection, whatever the URL
said, however the name was spelled and whatever DNS answered a moment
before (DNS rebinding), since what is judged is the very answer connected to.

Which crawl a resolution is for comes with it: webspider's download handler
sets a ``Ticket`` (a context variable, which follows the download's call
chain into Twisted) naming the crawl's guard and the host it connects to. A
resolution without a ticket (none of webspider's downloads) is judged by
every crawl open in the process (an address must be allowed by all), and
passes untouched when none is open.

The resolver is installed on the reactor when a crawl first needs it, and
again whenever something replaced it (CrawlerProcess installs
``TWISTED_DNS_RESOLVER`` after the crawl is created).
"""

from __future__ import annotations

import contextvars
import logging
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from webspider.addresses.dns import NameResolver, ResolutionReceiver, name_key
from webspider.addresses.guard import AddressGuard, Refusal, open_guards

if TYPE_CHECKING:
    from collections.abc import Sequence

    from twisted.internet.interfaces import IAddress

logger = logging.getLogger(__name__)


@dataclass
class Ticket:
    """What a download's connection may resolve, and what it was refused."""

    guard: AddressGuard
    #: the request's host (name_key); its addresses are judged
    host: str
    #: the proxy's host, set by the user: connected to whatever it resolves to
    proxy_host: str | None = None
    #: set when every address of ``host`` was refused
    refusal: Refusal | None = None


TICKET: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar(
    "webspider_address_ticket", default=None
)


class _Strictest:
    """The guards of several crawls: an address passes if all allow it."""

    def __init__(self, guards: Sequence[AddressGuard]) -> None:
        self.guards = guards

    def judge(
        self, name: str, addresses: list[IAddress], resolver: NameResolver
    ) -> Deferred[tuple[list[IAddress], Refusal | None]]:
        result: Deferred[tuple[list[IAddress], Refusal | None]] = succeed(
            (addresses, None)
        )
        for guard in self.guards:
            result.addCallback(self._narrow, guard, name, resolver)
        return result

    @staticmethod
    def _narrow(
        so_far: tuple[list[IAddress], Refusal | None],
        guard: AddressGuard,
        name: str,
        resolver: NameResolver,
    ) -> Any:
        allowed, refusal = so_far
        if refusal is not None or not allowed:
            return so_far
        return guard.judge(name, allowed, resolver)


@implementer(IHostnameResolver)
class GuardResolver:
    def __init__(self, inner: NameResolver) -> None:
        #: the resolver that really resolves
        self.inner = inner

    def resolveHostName(
        self,
        resolutionReceiver: ResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> object:
        ticket = TICKET.get()
        key = name_key(hostName)
        judge: AddressGuard | _Strictest | None
        if ticket is not None and key == ticket.proxy_host:
            judge = None
        elif ticket is not None and key == ticket.host:
            judge = ticket.guard
        else:
            ticket = None
            guards = open_guards()
            if not guards:
                judge = None
            else:
                judge = guards[0] if len(guards) == 1 else _Strictest(guards)
        if judge is None:
            return self.inner.resolveHostName(
                resolutionReceiver,
                hostName,
                portNumber,
                addressTypes,
                transportSemantics,
            )
        return self.inner.resolveHostName(
            _Judged(self, resolutionReceiver, hostName, judge, ticket),
            hostName,
            portNumber,
            addressTypes,
            transportSemantics,
        )


@implementer(IResolutionReceiver)
class _Judged:
    """Receives the inner resolver's answer; hands on what the guard allows."""

    def __init__(
        self,
        resolver: GuardResolver,
        receiver: ResolutionReceiver,
        name: str,
        judge: AddressGuard | _Strictest,
        ticket: Ticket | None,
    ) -> None:
        self.resolver = resolver
        self.receiver = receiver
        self.name = name
        self.judge = judge
        self.ticket = ticket
        self.addresses: list[IAddress] = []

    def resolutionBegan(self, resolutionInProgress: Any) -> None:
        self.receiver.resolutionBegan(resolutionInProgress)

    def addressResolved(self, address: IAddress) -> None:
        self.addresses.append(address)

    def resolutionComplete(self) -> None:
        d = self.judge.judge(self.name, self.addresses, self.resolver.inner)
        d.addCallbacks(self._hand_on, self._failed)

    def _hand_on(self, judged: tuple[list[IAddress], Refusal | None]) -> None:
        allowed, refusal = judged
        if refusal is not None:
            if self.ticket is not None:
                self.ticket.refusal = refusal
            judges = self.judge
            guards = judges.guards if isinstance(judges, _Strictest) else [judges]
            for guard in guards:
                guard.refused(refusal, connection=True)
        for address in allowed:
            self.receiver.addressResolved(address)
        self.receiver.resolutionComplete()

    def _failed(self, failure: Any) -> None:
        # fail closed: no address at all (the connection fails as a DNS error)
        logger.error("Address policy: judging %s failed: %s", self.name, failure)
        self.receiver.resolutionComplete()


def installed_resolver() -> GuardResolver:
    """The reactor's GuardResolver, installed over its resolver if needed."""
    reactor = _reactor()
    current = reactor.nameResolver
    if isinstance(current, GuardResolver):
        return current
    guard = GuardResolver(current)
    reactor.installNameResolver(guard)
    return guard


@cache
def _reactor() -> Any:
    # imported when first needed (Scrapy installs it first), and once: this
    # runs for every download
    from twisted.internet import reactor  # noqa: PLC0415, TID251

    return reactor
