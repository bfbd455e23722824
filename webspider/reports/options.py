"""The settings of the reports (docs/reports.md), validated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from webspider.config import get_bool, get_float, get_int
from webspider.reports.duplicates import get_ignore_patterns
from webspider.reports.progressline import get_mode

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def check_report_settings(settings: BaseSettings) -> None:
    """The settings of the reports (docs/reports.md)."""
    for name in (
        "WEBSPIDER_BROKEN_LINKS_ENABLED",
        "WEBSPIDER_CHECK_EXTERNAL",
        "WEBSPIDER_CHECK_ANCHORS",
        "WEBSPIDER_FAIL_ON_BROKEN",
        "WEBSPIDER_DUPLICATES_ENABLED",
        "WEBSPIDER_DUPLICATES_NORMALIZE",
        "WEBSPIDER_REPORT_ENABLED",
    ):
        get_bool(settings, name)
    get_int(settings, "WEBSPIDER_BROKEN_LINKS_MAX_REFERRERS", 1000, minimum=1)
    get_int(settings, "WEBSPIDER_REPORT_LARGEST", 20, minimum=0)
    get_float(settings, "WEBSPIDER_REPORT_INTERVAL", 60.0)
    get_float(settings, "WEBSPIDER_PROGRESS_REFRESH", 2.0, minimum=0.05)
    get_float(settings, "WEBSPIDER_PROGRESS_INTERVAL", 60.0, minimum=0.05)
    get_mode(settings)
    get_ignore_patterns(settings)
