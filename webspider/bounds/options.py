"""The bounds and trap rules, read once (README "Bounds and traps")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import Options, get_bool, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


@dataclass(frozen=True)
class BoundsOptions(Options):
    """Each number is a bound, 0 meaning none."""

    #: the trap rules at all (repeated segments, query strings, host budget)
    traps: bool = defaults.WEBSPIDER_TRAPS_ENABLED
    #: a segment (or run of segments) may come this many times in a row
    max_repeats: int = defaults.WEBSPIDER_TRAPS_MAX_REPEATS
    #: distinct query strings requested per path
    max_queries: int = defaults.WEBSPIDER_TRAPS_MAX_QUERIES
    #: requests per host
    max_host_requests: int = defaults.WEBSPIDER_TRAPS_MAX_HOST_REQUESTS
    #: characters of a URL (Scrapy's URLLENGTH_LIMIT)
    url_length: int = defaults.URLLENGTH_LIMIT
    #: bytes of response bodies held in memory before new downloads wait
    body_memory: int = defaults.WEBSPIDER_BODY_MEMORY_MAX

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        traps = get_bool(
            settings, "WEBSPIDER_TRAPS_ENABLED", defaults.WEBSPIDER_TRAPS_ENABLED
        )
        return cls(
            traps=traps,
            max_repeats=get_int(
                settings,
                "WEBSPIDER_TRAPS_MAX_REPEATS",
                defaults.WEBSPIDER_TRAPS_MAX_REPEATS,
                minimum=0,
            )
            if traps
            else 0,
            max_queries=get_int(
                settings,
                "WEBSPIDER_TRAPS_MAX_QUERIES",
                defaults.WEBSPIDER_TRAPS_MAX_QUERIES,
                minimum=0,
            )
            if traps
            else 0,
            max_host_requests=get_int(
                settings,
                "WEBSPIDER_TRAPS_MAX_HOST_REQUESTS",
                defaults.WEBSPIDER_TRAPS_MAX_HOST_REQUESTS,
                minimum=0,
            )
            if traps
            else 0,
            url_length=get_int(
                settings, "URLLENGTH_LIMIT", defaults.URLLENGTH_LIMIT, minimum=0
            ),
            body_memory=get_int(
                settings,
                "WEBSPIDER_BODY_MEMORY_MAX",
                defaults.WEBSPIDER_BODY_MEMORY_MAX,
                minimum=0,
            ),
        )
