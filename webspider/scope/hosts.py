"""Which hosts a crawl may visit: ``host``, ``domain`` or ``all``."""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import TYPE_CHECKING

from webspider.utils.url import ascii_host

if TYPE_CHECKING:
    from tldextract import TLDExtract


@lru_cache(maxsize=1)
def _extractor() -> TLDExtract:
    # Imported here: only scope=domain needs it, and the import (which pulls
    # in requests) would slow every crawl's start.
    from tldextract import TLDExtract  # noqa: PLC0415

    # The public suffix list snapshot that ships with tldextract (a Scrapy
    # dependency); never fetched from the network.
    return TLDExtract(suffix_list_urls=(), cache_dir=None)


@lru_cache(maxsize=4096)
def registered_domain(host: str) -> str:
    """``www.bbc.co.uk`` → ``bbc.co.uk``; an IP address or a name under an
    unknown suffix (``site.test``) falls back to its last two labels."""
    host = host.lower().rstrip(".")
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    result = _extractor()(host)
    domain = result.top_domain_under_public_suffix
    if domain:
        return str(domain)
    labels = host.split(".")
    return ".".join(labels[-2:])


class HostScope:
    """Decides whether a host is within the crawl's scope. Host names are
    compared in their IDNA form (webspider.utils.url.ascii_host), so
    ``bücher.test`` and ``xn--bcher-kva.test`` are one host."""

    def __init__(self, scope: str, seed_hosts: set[str]) -> None:
        self.scope = scope
        self.hosts = {ascii_host(h).rstrip(".") for h in seed_hosts}
        # Only scope=domain needs them, and the first lookup loads the public
        # suffix list, a noticeable part of a short crawl.
        self.domains = (
            {registered_domain(h) for h in self.hosts} if scope == "domain" else set()
        )

    def allows(self, host: str) -> bool:
        if self.scope == "all":
            return True
        host = ascii_host(host).rstrip(".")
        if host in self.hosts:
            return True
        if self.scope == "domain":
            return any(host == d or host.endswith("." + d) for d in self.domains)
        return False
