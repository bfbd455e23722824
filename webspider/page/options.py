"""What reading one page may cost: the page options, read once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import Options, get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


@dataclass(frozen=True)
class PageOptions(Options):
    """The bounds on reading one page or stylesheet (webspider.page.links):
    read in the crawl's process and sent to the page worker."""

    #: links collected from one page at most (0: no cap)
    max_links: int = defaults.WEBSPIDER_PAGE_MAX_LINKS
    #: seconds of CPU time the scan and link joining of one page may take (0:
    #: no budget)
    parse_budget: float = defaults.WEBSPIDER_PAGE_PARSE_BUDGET

    @property
    def link_cap(self) -> int | None:
        return self.max_links or None

    @property
    def budget(self) -> float | None:
        return self.parse_budget or None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        return cls(
            max_links=get_int(
                settings,
                "WEBSPIDER_PAGE_MAX_LINKS",
                defaults.WEBSPIDER_PAGE_MAX_LINKS,
                minimum=0,
            ),
            parse_budget=get_float(
                settings,
                "WEBSPIDER_PAGE_PARSE_BUDGET",
                defaults.WEBSPIDER_PAGE_PARSE_BUDGET,
            ),
        )
