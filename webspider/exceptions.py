"""Exceptions webspider raises where Scrapy's own say too little."""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest


class RobotsUnreachable(IgnoreRequest):
    """Not requested: its origin's robots.txt could not be fetched, so RFC 9309
    says assume complete disallow. A link to such a URL is reported broken
    (the host is down or refuses us), unlike one that robots.txt forbids."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"robots.txt unreachable ({reason}): {url}")
        self.url = url
        self.reason = reason
