"""Why a URL was not crawled: one reason per URL, counted and signalled.

Components that decide not to request a URL call ``record_skip`` (or
``record_skips`` for many at once); the stats show how many per reason and
the SkippedLog extension logs and writes them."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from pydispatch.dispatcher import getAllReceivers, liveReceivers

from webspider import signals
from webspider.keys import META_REFERER

if TYPE_CHECKING:
    from collections.abc import Sequence

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
#: the host is, or resolves to, an address the address policy refuses
ADDRESS = "address"
#: longer than URLLENGTH_LIMIT
URL_LENGTH = "url_length"
#: trap rules (webspider.bounds): a path segment repeated in a row, too many
#: query strings for one path, a host's request budget spent
REPEATED_PATH = "repeated_path"
QUERY_VARIANTS = "query_variants"
HOST_BUDGET = "host_budget"

STATS_PREFIX = "webspider/skipped/url_count"


def referer_of(request: Request) -> str | None:
    referer = request.meta.get(META_REFERER)
    return referer if isinstance(referer, str) else None


def record_skip(
    crawler: Crawler, url: str, reason: str, referer: str | None = None
) -> None:
    """Count a URL not crawled for ``reason`` and tell whoever listens."""
    record_skips(crawler, [(url, reason)], referer)


def record_skips(
    crawler: Crawler, skipped: Sequence[tuple[str, str]], referer: str | None = None
) -> None:
    """``record_skip`` for each (url, reason) found on page ``referer``, in
    that order: one stats call per reason and one urls_skipped signal for
    them all, and url_skipped for each only if something listens to it (an
    index page can skip thousands of outside links, and sending a signal is
    not free)."""
    if not skipped:
        return
    stats = crawler.stats
    if stats is not None:
        stats.inc_value(STATS_PREFIX, len(skipped))
        for reason, count in Counter(reason for _, reason in skipped).items():
            stats.inc_value(f"{STATS_PREFIX}/{reason}", count)
    send = crawler.signals.send_catch_log
    send(signals.urls_skipped, skipped=skipped, referer=referer)
    if has_receivers(crawler, signals.url_skipped):
        for url, reason in skipped:
            send(signals.url_skipped, url=url, reason=reason, referer=referer)


def has_receivers(crawler: Crawler, signal: object) -> bool:
    """Whether any handler is connected to ``signal`` (now)."""
    return any(liveReceivers(getAllReceivers(crawler.signals.sender, signal)))


def skip_request(crawler: Crawler, request: Request, reason: str) -> None:
    record_skip(crawler, request.url, reason, referer_of(request))
