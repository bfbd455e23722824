"""Every feature's checks, run before the crawl starts.

This module stands above the features: it imports each one's validators, so
that bad input is one clear line at start (the ``crawl`` command prints it
and exits with status 2) instead of a traceback deep inside a component.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import CrawlConfig, get_bool, get_float, get_int
from webspider.frontier.options import get_depth_options
from webspider.frontier.scheduler import check_scheduler
from webspider.mirror.options import get_mirror_dir
from webspider.politeness.options import politeness_settings, robots_settings
from webspider.reports.options import check_report_settings
from webspider.scope.options import get_dropped_seeds, get_scope

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


#: Validators that components register for their own settings, run by
#: ``check_settings`` before the crawl starts. Each raises ConfigError.
VALIDATORS: list[Callable[[BaseSettings], object]] = [
    CrawlConfig.from_settings,
    lambda s: get_bool(s, "ROBOTSTXT_OBEY", True),
    get_depth_options,
    check_scheduler,
    get_scope,
    check_report_settings,
    get_dropped_seeds,
    robots_settings,
    politeness_settings,
    get_mirror_dir,
    lambda s: get_int(s, "WEBSPIDER_MIRROR_THREAD_SIZE", 0, minimum=0),
]


def check_typed_settings(settings: BaseSettings) -> None:
    """Every WEBSPIDER_* setting whose default is a bool, int or float must
    parse as one: many are only read deep inside a component, where a bad
    value would otherwise be a traceback in the middle of the crawl."""
    for name in dir(defaults):
        if not name.startswith("WEBSPIDER_"):
            continue
        default = getattr(defaults, name)
        if isinstance(default, bool):
            get_bool(settings, name, default)
        elif isinstance(default, int):
            get_int(settings, name, default)
        elif isinstance(default, float):
            get_float(settings, name, default)


#: plain booleans and numbers, whichever component reads them
VALIDATORS.append(check_typed_settings)


def check_settings(settings: BaseSettings) -> None:
    for validate in VALIDATORS:
        validate(settings)
