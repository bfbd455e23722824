"""The politeness options: robots.txt, Crawl-delay, Retry-After, validated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import ConfigError, Options, get_bool, get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


#: RFC 9309 2.5: a robots.txt parsing limit MUST be at least 500 KiB.
ROBOTS_MIN_PARSE_BYTES = 500 * 1024


#: RFC 9309 2.4: robots.txt SHOULD NOT be cached for more than 24 hours.
ROBOTS_MAX_CACHE_TTL = 24 * 3600


CRAWL_DELAY_OVER_MAX_CHOICES = ("cap", "skip")


#: the shortest download timeout, seconds
MIN_TIMEOUT = 0.01


@dataclass(frozen=True)
class PolitenessOptions(Options):
    """robots.txt (RFC 9309), Crawl-delay and Retry-After, and the waiting room
    (see docs/scope-and-politeness.md)."""

    obey_robots: bool = defaults.ROBOTSTXT_OBEY
    #: parse this much of a robots.txt; the rest is ignored
    robots_max_bytes: int = defaults.WEBSPIDER_ROBOTSTXT_MAX_BYTES
    robots_cache_ttl: float = defaults.WEBSPIDER_ROBOTSTXT_CACHE_TTL
    robots_retry_times: int = defaults.WEBSPIDER_ROBOTSTXT_RETRY_TIMES
    robots_retry_delay: float = defaults.WEBSPIDER_ROBOTSTXT_RETRY_DELAY
    #: seconds a robots.txt download may take (at most DOWNLOAD_TIMEOUT)
    robots_download_timeout: float = defaults.WEBSPIDER_ROBOTSTXT_DOWNLOAD_TIMEOUT
    sitemaps: bool = defaults.WEBSPIDER_ROBOTSTXT_SITEMAPS
    enabled: bool = defaults.WEBSPIDER_POLITENESS_ENABLED
    crawl_delay_max: float = defaults.WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX
    #: "cap" or "skip"
    crawl_delay_over_max: str = defaults.WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX
    retry_after_max: float = defaults.WEBSPIDER_POLITENESS_RETRY_AFTER_MAX
    retry_after_times: int = defaults.WEBSPIDER_POLITENESS_RETRY_TIMES
    max_waiting_requests: int = defaults.WEBSPIDER_MAX_WAITING_REQUESTS
    #: the Redis crawl state shared by several workers (None: one process)
    shared_url: str | None = None
    #: seconds before a dead worker's robots.txt claim or place is given up
    #: (the crawl state's lease timeout, validated by the frontier's options)
    lease_timeout: float = defaults.WEBSPIDER_STATE_LEASE_TIMEOUT

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        ttl = get_float(settings, "WEBSPIDER_ROBOTSTXT_CACHE_TTL", minimum=1)
        if ttl > ROBOTS_MAX_CACHE_TTL:
            raise ConfigError(
                "WEBSPIDER_ROBOTSTXT_CACHE_TTL must be at most "
                f"{ROBOTS_MAX_CACHE_TTL} (24 hours, RFC 9309), got {ttl:g}"
            )
        over = settings.get("WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX")
        over = str(over or defaults.WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX)
        if over.strip().lower() not in CRAWL_DELAY_OVER_MAX_CHOICES:
            raise ConfigError(
                "WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX must be cap or skip, "
                f"got {over!r}"
            )
        return cls(
            obey_robots=get_bool(settings, "ROBOTSTXT_OBEY"),
            robots_max_bytes=get_int(
                settings,
                "WEBSPIDER_ROBOTSTXT_MAX_BYTES",
                minimum=ROBOTS_MIN_PARSE_BYTES,
            ),
            robots_cache_ttl=ttl,
            robots_retry_times=get_int(
                settings, "WEBSPIDER_ROBOTSTXT_RETRY_TIMES", minimum=0
            ),
            robots_retry_delay=get_float(settings, "WEBSPIDER_ROBOTSTXT_RETRY_DELAY"),
            robots_download_timeout=min(
                get_float(
                    settings,
                    "WEBSPIDER_ROBOTSTXT_DOWNLOAD_TIMEOUT",
                    minimum=MIN_TIMEOUT,
                ),
                get_float(settings, "DOWNLOAD_TIMEOUT", minimum=MIN_TIMEOUT),
            ),
            sitemaps=get_bool(settings, "WEBSPIDER_ROBOTSTXT_SITEMAPS"),
            enabled=get_bool(settings, "WEBSPIDER_POLITENESS_ENABLED"),
            crawl_delay_max=get_float(settings, "WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX"),
            crawl_delay_over_max=over.strip().lower(),
            retry_after_max=get_float(settings, "WEBSPIDER_POLITENESS_RETRY_AFTER_MAX"),
            retry_after_times=get_int(
                settings, "WEBSPIDER_POLITENESS_RETRY_TIMES", minimum=0
            ),
            max_waiting_requests=get_int(
                settings, "WEBSPIDER_MAX_WAITING_REQUESTS", minimum=0
            ),
            shared_url=shared_state_url(settings),
            lease_timeout=get_float(settings, "WEBSPIDER_STATE_LEASE_TIMEOUT"),
        )


#: crawl states that several workers share (the rest live in one process)
SHARED_SCHEMES = ("redis://", "rediss://", "unix://")


def shared_state_url(settings: BaseSettings) -> str | None:
    """The URL of the crawl state when several workers share it (Redis)."""
    url = str(settings.get("WEBSPIDER_STATE") or "").strip()
    return url if url.lower().startswith(SHARED_SCHEMES) else None
