"""Flag pages whose content an earlier URL already served.

The spider asks ``duplicate_of(response, content_hash)`` for every page
before following its links: a duplicate gets ``duplicate_of: <first URL>`` on
its item and its links are not followed again (they are the first page's
links, and relative ones resolved against a parameter-laden URL are where
crawler traps start). Bodies are compared exactly (the item's
``content_hash``); with WEBSPIDER_DUPLICATES_NORMALIZE, HTML pages are also
compared after removing comments, timestamps, the user's patterns and
white space (webspider.reports.fingerprint documents the normalisation).
Empty bodies are never duplicates.

Settings: WEBSPIDER_DUPLICATES_ENABLED, WEBSPIDER_DUPLICATES_NORMALIZE,
WEBSPIDER_DUPLICATES_IGNORE_RE. With JOBDIR the index is kept in
``<JOBDIR>/webspider-duplicates.json`` across a pause.
Stats: ``webspider/duplicates/page_count`` (``/exact``, ``/normalized``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import TextResponse
from scrapy.utils.job import job_dir

from webspider.keys import DUPLICATES_STATE_FILE, STATS_DUPLICATES
from webspider.page.response import is_html
from webspider.reports.fingerprint import (
    EXACT,
    NORMALIZED,
    ContentIndex,
    normalized_hash,
)
from webspider.reports.options import ReportOptions
from webspider.utils.atomic import write_atomic

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

logger = logging.getLogger(__name__)

#: the content index of a paused crawl, in JOBDIR

#: duplicates kept for the report (all are counted, and all are in pages.jsonl)
MAX_KEPT = 1000


class DuplicateContent:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = ReportOptions.of(settings)
        if not options.duplicates:
            raise NotConfigured
        self.normalize = options.duplicates_normalize
        self.ignore = options.duplicates_ignore
        self.exact = ContentIndex()
        self.normalized = ContentIndex()
        #: (url, first url, kind) of the first MAX_KEPT duplicates
        self.found: list[tuple[str, str, str]] = []
        self.count = 0
        directory = job_dir(settings)
        self.state_path = Path(directory) / DUPLICATES_STATE_FILE if directory else None
        if self.state_path is not None:
            crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
            crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def duplicate_of(self, response: Response, content_hash: str) -> str | None:
        """The URL that served this content first, or None (remembered then)."""
        if not response.body:
            return None
        url = response.url
        first = self.exact.first_url(content_hash, url)
        kind = EXACT
        if self.normalize and isinstance(response, TextResponse) and is_html(response):
            digest = normalized_hash(response.text, self.ignore)
            near = self.normalized.first_url(digest, url)
            if first is None and near is not None:
                first, kind = near, NORMALIZED
        if first is None:
            return None
        self.count += 1
        if len(self.found) < MAX_KEPT:
            self.found.append((url, first, kind))
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(STATS_DUPLICATES)
            stats.inc_value(f"{STATS_DUPLICATES}/{kind}")
        return first

    def spider_opened(self) -> None:
        if self.state_path is not None and self.state_path.exists():
            with self.state_path.open(encoding="utf-8") as fh:
                data = json.load(fh)
            self.exact.load(data.get("exact", {}))
            self.normalized.load(data.get("normalized", {}))

    def spider_closed(self) -> None:
        if self.state_path is None:
            return
        data = {"exact": self.exact.dump(), "normalized": self.normalized.dump()}
        try:
            write_atomic(self.state_path, json.dumps(data))
        except OSError as exc:
            logger.error("Cannot write %s: %s", self.state_path, exc)
