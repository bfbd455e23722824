"""The page worker's options, read once."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import Options, get_bool, get_float

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

#: the shortest answer timeout, seconds
MIN_TIMEOUT = 0.01


@dataclass(frozen=True)
class PageWorkerOptions(Options):
    #: on where it can run: pipes on the event loop and select() on them in
    #: the worker need POSIX
    enabled: bool = defaults.WEBSPIDER_PAGE_WORKER
    #: seconds an answer may take before the worker is given up (a page of
    #: DOWNLOAD_MAXSIZE takes seconds)
    timeout: float = defaults.WEBSPIDER_PAGE_WORKER_TIMEOUT

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        enabled = get_bool(settings, "WEBSPIDER_PAGE_WORKER")
        return cls(
            enabled=enabled and os.name == "posix",
            timeout=get_float(
                settings, "WEBSPIDER_PAGE_WORKER_TIMEOUT", minimum=MIN_TIMEOUT
            ),
        )
