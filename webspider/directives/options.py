"""The page-directive options (docs/page-directives.md), read once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import Options, get_bool

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


@dataclass(frozen=True)
class DirectivesOptions(Options):
    """Which robots directives of a page are obeyed, and the page events."""

    enabled: bool = defaults.WEBSPIDER_DIRECTIVES_ENABLED
    #: <meta name="robots">; the rest of these are off with robots=0
    meta: bool = defaults.WEBSPIDER_DIRECTIVES_META
    #: X-Robots-Tag
    header: bool = defaults.WEBSPIDER_DIRECTIVES_HEADER
    #: rel=nofollow
    rel: bool = defaults.WEBSPIDER_DIRECTIVES_REL
    #: export noindex pages (marked) instead of dropping them
    export_noindex: bool = defaults.WEBSPIDER_EXPORT_NOINDEX
    page_events: bool = defaults.WEBSPIDER_PAGE_EVENTS_ENABLED

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        obey = get_bool(settings, "ROBOTSTXT_OBEY")
        return cls(
            enabled=get_bool(settings, "WEBSPIDER_DIRECTIVES_ENABLED"),
            meta=obey and get_bool(settings, "WEBSPIDER_DIRECTIVES_META"),
            header=obey and get_bool(settings, "WEBSPIDER_DIRECTIVES_HEADER"),
            rel=obey and get_bool(settings, "WEBSPIDER_DIRECTIVES_REL"),
            export_noindex=get_bool(settings, "WEBSPIDER_EXPORT_NOINDEX"),
            page_events=get_bool(settings, "WEBSPIDER_PAGE_EVENTS_ENABLED"),
        )
