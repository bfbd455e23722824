"""DNS for test host names: every ``*.test`` name (RFC 6761 reserves the
``.test`` TLD for testing) resolves to 127.0.0.1, so tests can give local
servers real, distinct host names (``site.test``, ``www.site.test``,
``other.test``) for scope tests. A name whose first label is
``ip-A-B-C-D`` resolves to A.B.C.D instead (``ip-127-0-0-2.site.test`` is
127.0.0.2: a subdomain of site.test on another loopback address), as
sslip.io's names do. A name whose first label is ``nxdomain`` does not
resolve at all (as a name the DNS does not know: no address, no wait on the
system's resolver). Everything else resolves as usual.

Used through Scrapy's own ``TWISTED_DNS_RESOLVER`` setting:
``-s TWISTED_DNS_RESOLVER=tests.support.resolver.LoopbackTestResolver``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

if TYPE_CHECKING:
    from collections.abc import Sequence

_ADDRESS_LABEL = re.compile(r"ip-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})\.")


def name_address(name: str) -> str | None:
    """The address a ``.test`` name resolves to; None for other names, ""
    for a ``nxdomain.*.test`` name."""
    name = name.lower().rstrip(".")
    if name != "test" and not name.endswith(".test"):
        return None
    if name.startswith("nxdomain."):
        return ""
    match = _ADDRESS_LABEL.match(name)
    return ".".join(match.groups()) if match else "127.0.0.1"


class LoopbackTestResolver(CachingThreadedResolver):
    def getHostByName(
        self, name: str, timeout: Sequence[int] = ()
    ) -> defer.Deferred[str]:
        address = name_address(name)
        if address == "":
            return defer.fail(DNSLookupError(f"no such name (test resolver): {name}"))
        if address is not None:
            return defer.succeed(address)
        return super().getHostByName(name, timeout)


RESOLVER = f"{__name__}.LoopbackTestResolver"
