"""Which IP addresses a crawl may connect to: pure logic, tested with tables.

By default every special-purpose address is refused — loopback, private,
link-local, CGNAT (100.64/10), multicast, reserved, documentation,
benchmarking and unspecified, IPv4 and IPv6 — and every other (global)
address is allowed. An IPv6 address that stands for an IPv4 one
(IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``)
is judged as the IPv4 address it reaches. The table is written out here,
rather than taken from ``ipaddress``'s ``is_private``/``is_global``, because
those changed between Python releases (and call multicast global): what is
refused must not depend on the interpreter.

Host names of URLs are read as a browser reads them (the WHATWG URL
standard, as glibc's ``inet_aton``): ``2130706434``, ``0x7f000002``,
``0177.0.0.2`` and ``127.1`` are IPv4 addresses, not names, so a page cannot
spell a refused address in a way the check does not recognise.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
    ip_network,
)

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

UNSPECIFIED = "unspecified"
LOOPBACK = "loopback"
PRIVATE = "private"
LINK_LOCAL = "link-local"
CGNAT = "cgnat"
MULTICAST = "multicast"
RESERVED = "reserved"

#: special-purpose IPv4 networks (IANA's registry, RFC 6890 and later), with
#: the category a refusal names
IPV4_SPECIAL: tuple[tuple[IPv4Network, str], ...] = tuple(
    (IPv4Network(net), category)
    for net, category in (
        ("0.0.0.0/8", UNSPECIFIED),  # "this network"; 0.0.0.0 reaches localhost
        ("10.0.0.0/8", PRIVATE),
        ("100.64.0.0/10", CGNAT),  # shared address space (RFC 6598)
        ("127.0.0.0/8", LOOPBACK),
        ("169.254.0.0/16", LINK_LOCAL),  # cloud metadata at 169.254.169.254
        ("172.16.0.0/12", PRIVATE),
        ("192.0.0.0/24", RESERVED),  # IETF protocol assignments
        ("192.0.2.0/24", RESERVED),  # documentation
        ("192.88.99.0/24", RESERVED),  # 6to4 relay anycast
        ("192.168.0.0/16", PRIVATE),
        ("198.18.0.0/15", RESERVED),  # benchmarking
        ("198.51.100.0/24", RESERVED),  # documentation
        ("203.0.113.0/24", RESERVED),  # documentation
        ("224.0.0.0/4", MULTICAST),
        ("240.0.0.0/4", RESERVED),  # and 255.255.255.255, broadcast
    )
)

#: special-purpose IPv6 networks; the first that holds an address names it
IPV6_SPECIAL: tuple[tuple[IPv6Network, str], ...] = tuple(
    (IPv6Network(net), category)
    for net, category in (
        ("::/128", UNSPECIFIED),
        ("::1/128", LOOPBACK),
        ("::/96", RESERVED),  # IPv4-compatible (deprecated)
        ("::ffff:0:0:0/96", RESERVED),  # IPv4-translated (SIIT)
        ("64:ff9b:1::/48", PRIVATE),  # local-use NAT64
        ("100::/64", RESERVED),  # discard-only
        ("2001:db8::/32", RESERVED),  # documentation
        ("2001::/23", RESERVED),  # IETF protocol assignments (Teredo…)
        ("3fff::/20", RESERVED),  # documentation
        ("fc00::/7", PRIVATE),  # unique local
        ("fe80::/10", LINK_LOCAL),
        ("fec0::/10", PRIVATE),  # site-local (deprecated)
        ("ff00::/8", MULTICAST),
    )
)

#: NAT64's well-known prefix: the last 32 bits are the IPv4 address reached
NAT64 = IPv6Network("64:ff9b::/96")


def reached(address: IPAddress) -> IPAddress:
    """The address a connection to ``address`` really reaches: the IPv4
    address an IPv4-mapped, NAT64 or 6to4 address stands for, else itself."""
    if isinstance(address, IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in NAT64:
            return IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
    return address


def special_category(address: IPAddress) -> str | None:
    """The category of a special-purpose address (``loopback``, ``private``…),
    None for a global one."""
    target = reached(address)
    table: Sequence[tuple[IPNetwork, str]] = (
        IPV4_SPECIAL if isinstance(target, IPv4Address) else IPV6_SPECIAL
    )
    for network, category in table:
        if target in network:
            return category
    return None


class BadNetworkError(ValueError):
    """A network of the allow-list that is not an address or CIDR block."""


def parse_networks(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDR blocks (``10.1.0.0/16``, ``fd00::/8``) or single addresses."""
    networks: list[IPNetwork] = []
    for value in values:
        text = value.strip()
        if not text:
            continue
        try:
            # strict=False: "10.1.2.3/16" means the network that holds it
            networks.append(ip_network(text, strict=False))
        except ValueError:
            raise BadNetworkError(
                f"{text!r} is not an IP address or network (CIDR, e.g. 10.0.0.0/8)"
            ) from None
    return tuple(networks)


@dataclass(frozen=True)
class AddressPolicy:
    """Refuse special-purpose addresses, except the allowed networks and the
    addresses given as exempt (those the start URLs resolve to)."""

    #: networks allowed although special (WEBSPIDER_ADDRESSES_ALLOW)
    allowed: tuple[IPNetwork, ...] = ()

    def refusal(
        self, address: IPAddress, exempt: Collection[IPAddress] = frozenset()
    ) -> str | None:
        """Why ``address`` is refused (its category), None when allowed."""
        category = special_category(address)
        if category is None:
            return None
        target = reached(address)
        if address in exempt or target in exempt:
            return None
        for network in self.allowed:
            if address in network or target in network:
                return None
        return category


# -- numeric host names ------------------------------------------------------------
_DIGITS = {
    10: re.compile(r"[0-9]+"),
    8: re.compile(r"[0-7]*"),
    16: re.compile(r"[0-9a-fA-F]*"),
}


def _ipv4_number(part: str) -> int | None:
    # WHATWG URL "IPv4 number parser": 0x… hex, 0… octal, else decimal
    if not part:
        return None
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if not _DIGITS[radix].fullmatch(part):
        return None
    return int(part, radix) if part else 0


def parse_ipv4(host: str) -> IPv4Address | None:
    """The IPv4 address a URL host stands for in any browser-accepted
    spelling (``127.0.0.2``, ``2130706434``, ``0x7f000002``, ``0177.0.0.2``,
    ``127.1``, a trailing dot), or None for a name."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_ipv4_number(part) for part in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    *leading, last = values
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(values)):
        return None
    value = last
    for i, n in enumerate(leading):
        value += n << (8 * (3 - i))
    return IPv4Address(value)


def parse_host_address(host: str) -> IPAddress | None:
    """The IP address a URL's host is written as (IPv6 with or without its
    brackets, IPv4 in any spelling), or None when the host is a name."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ip_address(host.split("%", 1)[0])
        except ValueError:
            return None
    if not host or not (host[-1].isdigit() or host[-1] == "." or "0x" in host.lower()):
        # a name: its last label is not a number (the fast answer for almost
        # every host; "0x" may end in hex letters)
        return None
    return parse_ipv4(host)
