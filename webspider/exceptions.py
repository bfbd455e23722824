"""Exceptions webspider raises where Scrapy's own say too little."""

from __future__ import annotations

from scrapy.exceptions import CannotResolveHostError, DownloadFailedError, IgnoreRequest
from twisted.internet.error import DNSLookupError

#: what a download raises when the host name has no address (Twisted's
#: client raises the first, Scrapy 2.19's handlers and webspider's lean client
#: the second)
DNS_FAILURES = (DNSLookupError, CannotResolveHostError)


class CrawlStateError(Exception):
    """The crawl state cannot be used (corrupt, truncated, another format
    version, locked by another crawl, its keys gone); the message is one
    line naming the file (or the Redis crawl). Raised while the crawl runs,
    it stops the crawl as a damaged state (webspider.storage)."""


class StateWriteRefused(CrawlStateError):
    """The crawl state's store refused a write that it may accept later (a
    Redis out of memory, a read-only replica, a password changed): the state
    is sound, and the crawl stops as for a write the disk refused
    (webspider.storage), resumable once ``advice`` is followed."""

    def __init__(self, message: str, advice: str) -> None:
        super().__init__(message)
        self.advice = advice


class RobotsUnreachable(IgnoreRequest):
    """Not requested: its origin's robots.txt could not be fetched, so RFC 9309
    says assume complete disallow. A link to such a URL is reported broken
    (the host is down or refuses us), unlike one that robots.txt forbids."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"robots.txt unreachable ({reason}): {url}")
        self.url = url
        self.reason = reason


class HostUnresolved(IgnoreRequest):
    """Not requested: its host name did not resolve when its origin's
    robots.txt was fetched (on every robots.txt attempt). The request would
    fail the same way, so the link is reported broken as ``dns_error``, as
    one whose own download found no address, not as ``robots_unreachable``."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"host name does not resolve ({reason}): {url}")
        self.url = url
        self.reason = reason


class AddressRefused(IgnoreRequest):
    """Not requested: its host is, or resolves to, an address the address
    policy refuses (loopback, private, link-local…). A decision, not a
    failure: skipped with reason ``address``, never reported broken."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"address refused ({reason}): {url}")
        self.url = url
        self.reason = reason


def is_dns_failure(exc: BaseException) -> bool:
    """Whether a download failed because its host name has no address
    (through Scrapy's DownloadFailedError wrapping)."""
    while isinstance(exc, DownloadFailedError) and exc.__cause__ is not None:
        exc = exc.__cause__
    return isinstance(exc, DNS_FAILURES)
