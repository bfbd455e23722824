"""The reports' options (docs/reports.md), read and validated once."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import ConfigError, Options, get_bool, get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

#: WEBSPIDER_PROGRESS values
PROGRESS_MODES = ("auto", "terminal", "log", "off")
#: the shortest progress refresh and log interval, seconds
MIN_PROGRESS_INTERVAL = 0.05


def get_ignore_patterns(settings: BaseSettings) -> tuple[re.Pattern[str], ...]:
    """WEBSPIDER_DUPLICATES_IGNORE_RE: a list, or on the command line a JSON
    list (regular expressions often contain commas) or one expression."""
    raw = settings.get("WEBSPIDER_DUPLICATES_IGNORE_RE") or []
    if isinstance(raw, str):
        text = raw.strip()
        try:
            raw = json.loads(text) if text.startswith("[") else [text]
        except ValueError:
            raise ConfigError(
                f"WEBSPIDER_DUPLICATES_IGNORE_RE is not a JSON list: {text!r}"
            ) from None
    patterns = []
    for value in raw:
        try:
            patterns.append(re.compile(str(value)))
        except re.error as exc:
            raise ConfigError(
                "WEBSPIDER_DUPLICATES_IGNORE_RE: bad regular expression "
                f"{value!r} ({exc})"
            ) from None
    return tuple(patterns)


def get_mode(settings: BaseSettings) -> str:
    raw = settings.get("WEBSPIDER_PROGRESS") or defaults.WEBSPIDER_PROGRESS
    mode = str(raw).strip().lower()
    if mode not in PROGRESS_MODES:
        raise ConfigError(
            f"WEBSPIDER_PROGRESS must be one of {', '.join(PROGRESS_MODES)}, "
            f"got {mode!r}"
        )
    return mode


@dataclass(frozen=True)
class ReportOptions(Options):
    """What the report components read."""

    broken_links: bool = defaults.WEBSPIDER_BROKEN_LINKS_ENABLED
    #: referrers kept per broken URL (all are counted)
    max_referrers: int = defaults.WEBSPIDER_BROKEN_LINKS_MAX_REFERRERS
    check_external: bool = defaults.WEBSPIDER_CHECK_EXTERNAL
    check_anchors: bool = defaults.WEBSPIDER_CHECK_ANCHORS
    fail_on_broken: bool = defaults.WEBSPIDER_FAIL_ON_BROKEN
    duplicates: bool = defaults.WEBSPIDER_DUPLICATES_ENABLED
    duplicates_normalize: bool = defaults.WEBSPIDER_DUPLICATES_NORMALIZE
    duplicates_ignore: tuple[re.Pattern[str], ...] = ()
    #: auto, terminal, log or off
    progress: str = defaults.WEBSPIDER_PROGRESS
    progress_refresh: float = defaults.WEBSPIDER_PROGRESS_REFRESH
    progress_interval: float = defaults.WEBSPIDER_PROGRESS_INTERVAL
    report: bool = defaults.WEBSPIDER_REPORT_ENABLED
    #: seconds between rewrites of the report files while the crawl runs
    report_interval: float = defaults.WEBSPIDER_REPORT_INTERVAL
    report_largest: int = defaults.WEBSPIDER_REPORT_LARGEST
    log_skipped: bool = defaults.WEBSPIDER_LOG_SKIPPED
    log_skipped_max_hosts: int = defaults.WEBSPIDER_LOG_SKIPPED_MAX_HOSTS

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        return cls(
            broken_links=get_bool(settings, "WEBSPIDER_BROKEN_LINKS_ENABLED"),
            max_referrers=get_int(
                settings, "WEBSPIDER_BROKEN_LINKS_MAX_REFERRERS", minimum=1
            ),
            check_external=get_bool(settings, "WEBSPIDER_CHECK_EXTERNAL"),
            check_anchors=get_bool(settings, "WEBSPIDER_CHECK_ANCHORS"),
            fail_on_broken=get_bool(settings, "WEBSPIDER_FAIL_ON_BROKEN"),
            duplicates=get_bool(settings, "WEBSPIDER_DUPLICATES_ENABLED"),
            duplicates_normalize=get_bool(settings, "WEBSPIDER_DUPLICATES_NORMALIZE"),
            duplicates_ignore=get_ignore_patterns(settings),
            progress=get_mode(settings),
            progress_refresh=get_float(
                settings, "WEBSPIDER_PROGRESS_REFRESH", minimum=MIN_PROGRESS_INTERVAL
            ),
            progress_interval=get_float(
                settings, "WEBSPIDER_PROGRESS_INTERVAL", minimum=MIN_PROGRESS_INTERVAL
            ),
            report=get_bool(settings, "WEBSPIDER_REPORT_ENABLED"),
            report_interval=get_float(settings, "WEBSPIDER_REPORT_INTERVAL"),
            report_largest=get_int(settings, "WEBSPIDER_REPORT_LARGEST", minimum=0),
            log_skipped=get_bool(settings, "WEBSPIDER_LOG_SKIPPED"),
            log_skipped_max_hosts=get_int(
                settings, "WEBSPIDER_LOG_SKIPPED_MAX_HOSTS", minimum=0
            ),
        )


def check_report_settings(settings: BaseSettings) -> None:
    """The settings of the reports (docs/reports.md)."""
    ReportOptions.from_settings(settings)
