"""The robots.txt and Crawl-delay / Retry-After options, validated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from webspider.config import ConfigError, get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


#: RFC 9309 2.5: a robots.txt parsing limit MUST be at least 500 KiB.
ROBOTS_MIN_PARSE_BYTES = 500 * 1024


#: RFC 9309 2.4: robots.txt SHOULD NOT be cached for more than 24 hours.
ROBOTS_MAX_CACHE_TTL = 24 * 3600


CRAWL_DELAY_OVER_MAX_CHOICES = ("cap", "skip")


def robots_settings(settings: BaseSettings) -> tuple[int, float, int, float]:
    """(max bytes, cache ttl, retry times, retry delay), validated."""
    max_bytes = get_int(
        settings, "WEBSPIDER_ROBOTSTXT_MAX_BYTES", minimum=ROBOTS_MIN_PARSE_BYTES
    )
    ttl = get_float(
        settings, "WEBSPIDER_ROBOTSTXT_CACHE_TTL", ROBOTS_MAX_CACHE_TTL, minimum=1
    )
    if ttl > ROBOTS_MAX_CACHE_TTL:
        raise ConfigError(
            f"WEBSPIDER_ROBOTSTXT_CACHE_TTL must be at most {ROBOTS_MAX_CACHE_TTL} "
            f"(24 hours, RFC 9309), got {ttl:g}"
        )
    retries = get_int(settings, "WEBSPIDER_ROBOTSTXT_RETRY_TIMES", 3, minimum=0)
    delay = get_float(settings, "WEBSPIDER_ROBOTSTXT_RETRY_DELAY", 5.0)
    return max_bytes, ttl, retries, delay


def politeness_settings(settings: BaseSettings) -> tuple[float, str, float, int]:
    """(crawl-delay cap, over-cap choice, pause cap, retry budget), validated."""
    cap = get_float(settings, "WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX", 60.0)
    over = str(settings.get("WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX") or "cap")
    if over.strip().lower() not in CRAWL_DELAY_OVER_MAX_CHOICES:
        raise ConfigError(
            "WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX must be cap or skip, "
            f"got {over!r}"
        )
    pause = get_float(settings, "WEBSPIDER_POLITENESS_RETRY_AFTER_MAX", 600.0)
    retries = get_int(settings, "WEBSPIDER_POLITENESS_RETRY_TIMES", 5, minimum=0)
    return cap, over.strip().lower(), pause, retries
