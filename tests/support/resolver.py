"""DNS for test host names: every ``*.test`` name (RFC 6761 reserves the
``.test`` TLD for testing) resolves to 127.0.0.1, so tests can give local
servers real, distinct host names (``site.test``, ``www.site.test``,
``other.test``) for scope tests. Everything else resolves as usual.

Used through Scrapy's own ``TWISTED_DNS_RESOLVER`` setting:
``-s TWISTED_DNS_RESOLVER=tests.support.resolver.LoopbackTestResolver``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer

if TYPE_CHECKING:
    from collections.abc import Sequence


class LoopbackTestResolver(CachingThreadedResolver):
    def getHostByName(
        self, name: str, timeout: Sequence[int] = ()
    ) -> defer.Deferred[str]:
        if name == "test" or name.endswith(".test"):
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)


RESOLVER = f"{__name__}.LoopbackTestResolver"
