"""Why a URL was not crawled: one reason per URL, counted and signalled.

Components that decide not to request a URL call ``record_skip``; the stats
show how many per reason and the SkippedLog extension logs and writes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from webspider import signals

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

SCOPE = "scope"
INCLUDE = "include"
EXCLUDE = "exclude"
EXCLUDE_RE = "exclude_re"
ROBOTS = "robots"
ROBOTS_UNREACHABLE = "robots_unreachable"
#: robots.txt asks for a Crawl-delay above the cap, and the user chose "skip"
CRAWL_DELAY = "crawl_delay"
NOFOLLOW = "nofollow"
NOFOLLOW_LINK = "nofollow_link"
DEPTH = "depth"
DEPTH_LIMIT = "depth_limit"

STATS_PREFIX = "webspider/skipped/url_count"


def referer_of(request: Request) -> str | None:
    referer = request.meta.get("webspider_referer")
    return referer if isinstance(referer, str) else None


def record_skip(
    crawler: Crawler, url: str, reason: str, referer: str | None = None
) -> None:
    """Count a URL not crawled for ``reason`` and tell whoever listens."""
    stats = crawler.stats
    if stats is not None:
        stats.inc_value(STATS_PREFIX)
        stats.inc_value(f"{STATS_PREFIX}/{reason}")
    crawler.signals.send_catch_log(
        signals.url_skipped, url=url, reason=reason, referer=referer
    )


def skip_request(crawler: Crawler, request: Request, reason: str) -> None:
    record_skip(crawler, request.url, reason, referer_of(request))
