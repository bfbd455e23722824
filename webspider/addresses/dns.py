"""Name resolution as the address policy uses it: Twisted's resolver
interfaces (as Protocols mypy can check callers against), a lookup that
collects a name's addresses, and the forms names and addresses are compared
in."""

from __future__ import annotations

from ipaddress import ip_address
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IResolutionReceiver
from zope.interface import implementer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from twisted.internet.interfaces import IAddress

    from webspider.addresses.policy import IPAddress


class ResolutionReceiver(Protocol):
    """Twisted's IResolutionReceiver, as mypy can check its callers."""

    def resolutionBegan(self, resolutionInProgress: Any) -> None: ...

    def addressResolved(self, address: IAddress) -> None: ...

    def resolutionComplete(self) -> None: ...


class NameResolver(Protocol):
    """Twisted's NameResolver, as mypy can check its callers."""

    def resolveHostName(
        self,
        resolutionReceiver: ResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> Any: ...


def name_key(name: str) -> str:
    """A host name as the guard compares it: lower case, no trailing dot,
    IDNA-encoded (Twisted resolves ``bücher.test``, URLs say
    ``xn--bcher-kva.test``)."""
    name = name.rstrip(".").lower()
    if name.isascii():
        return name
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return name


def address_of(address: IAddress) -> IPAddress | None:
    """The IP address of a resolved Twisted address (None if it has none)."""
    try:
        return ip_address(str(getattr(address, "host", "")).split("%", 1)[0])
    except ValueError:
        return None


def resolve(resolver: NameResolver, name: str) -> Deferred[list[IAddress]]:
    """The addresses ``name`` resolves to (empty when it does not)."""
    done: Deferred[list[IAddress]] = Deferred()
    found: list[IAddress] = []

    @implementer(IResolutionReceiver)
    class Receiver:
        @staticmethod
        def resolutionBegan(resolutionInProgress: Any) -> None:
            pass

        @staticmethod
        def addressResolved(address: IAddress) -> None:
            found.append(address)

        @staticmethod
        def resolutionComplete() -> None:
            done.callback(found)

    resolver.resolveHostName(Receiver(), name)
    return done
