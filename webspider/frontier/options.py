"""The depth cap and rounds options (see docs/depth-and-rounds.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider.config import ConfigError, get_bool, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True)
class DepthOptions:
    """Depth cap and rounds (see docs/depth-and-rounds.md)."""

    #: None: no cap
    max_depth: int | None
    #: rounds after the first; None: unlimited
    max_rounds: int | None
    #: defer over-depth links to a later round (else drop them)
    defer: bool
    #: strict breadth-first levels (the scheduler's level barrier)
    strict: bool


def _optional_int(settings: BaseSettings, name: str) -> int | None:
    raw = settings.get(name)
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none")):
        return None
    return get_int(settings, name, minimum=0)


def get_depth_options(settings: BaseSettings) -> DepthOptions:
    if get_int(settings, "DEPTH_LIMIT", 0):
        raise ConfigError(
            "DEPTH_LIMIT is not used by webspider: use -a max_depth=N "
            "(over-depth links are deferred to a later round; -a defer=0 drops them)"
        )
    options = DepthOptions(
        max_depth=_optional_int(settings, "WEBSPIDER_DEPTH_MAX"),
        max_rounds=_optional_int(settings, "WEBSPIDER_DEPTH_MAX_ROUNDS"),
        defer=get_bool(settings, "WEBSPIDER_DEPTH_DEFER", True),
        strict=get_bool(settings, "WEBSPIDER_DEPTH_STRICT", True),
    )
    return options
