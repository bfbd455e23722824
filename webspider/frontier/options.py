"""The frontier options: depth cap, rounds, shuffle (docs/depth-and-rounds.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import ConfigError, Options, get_bool, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


@dataclass(frozen=True)
class DepthOptions(Options):
    """Depth cap and rounds (see docs/depth-and-rounds.md)."""

    #: None: no cap
    max_depth: int | None = defaults.WEBSPIDER_DEPTH_MAX
    #: rounds after the first; None: unlimited
    max_rounds: int | None = defaults.WEBSPIDER_DEPTH_MAX_ROUNDS
    #: defer over-depth links to a later round (else drop them)
    defer: bool = defaults.WEBSPIDER_DEPTH_DEFER
    #: strict breadth-first levels (the scheduler's level barrier)
    strict: bool = defaults.WEBSPIDER_DEPTH_STRICT
    #: the depth middleware (off: no cap, no deferral, no depth stats)
    enabled: bool = defaults.WEBSPIDER_DEPTH_ENABLED
    #: shuffle each page's links before anyone sees them
    shuffle: bool = defaults.WEBSPIDER_SHUFFLE_ENABLED

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        if get_int(settings, "DEPTH_LIMIT", 0):
            raise ConfigError(
                "DEPTH_LIMIT is not used by webspider: use -a max_depth=N (over-depth "
                "links are deferred to a later round; -a defer=0 drops them)"
            )
        return cls(
            max_depth=_optional_int(settings, "WEBSPIDER_DEPTH_MAX"),
            max_rounds=_optional_int(settings, "WEBSPIDER_DEPTH_MAX_ROUNDS"),
            defer=get_bool(settings, "WEBSPIDER_DEPTH_DEFER"),
            strict=get_bool(settings, "WEBSPIDER_DEPTH_STRICT"),
            enabled=get_bool(settings, "WEBSPIDER_DEPTH_ENABLED"),
            shuffle=get_bool(settings, "WEBSPIDER_SHUFFLE_ENABLED"),
        )


def _optional_int(settings: BaseSettings, name: str) -> int | None:
    raw = settings.get(name)
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none")):
        return None
    return get_int(settings, name, minimum=0)


def get_depth_options(settings: BaseSettings) -> DepthOptions:
    return DepthOptions.of(settings)
