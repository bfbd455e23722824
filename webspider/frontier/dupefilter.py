"""The crawl's seen-set: each canonical URL is requested at most once.

Keyed on the canonical URL string (webspider.utils.url.canonical_url) rather
than on Scrapy's sha1 request fingerprint: as cheap to compare, much cheaper
to compute, and the same key the spider uses to drop already-seen links
before it builds Requests for them (the spider reads ``spider.seen_urls``,
which this filter sets when it opens).

Start URLs go through it too (Scrapy's default start requests bypass the
filter, so a start page that other pages link to would be fetched twice).

With JOBDIR the seen-set is appended to ``<JOBDIR>/webspider-seen.txt`` as it
grows and read back when the job resumes.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import IO, TYPE_CHECKING

from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.job import job_dir

from webspider.keys import SEEN_FILE, STATE_FILE
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

logger = logging.getLogger(__name__)

STATS_FILTERED = "webspider/scheduler/duplicate_count"


def is_resumed_job(settings: BaseSettings) -> bool:
    """Whether JOBDIR holds a job to resume (its crawl state was written)."""
    directory = job_dir(settings)
    return directory is not None and (Path(directory) / STATE_FILE).exists()


def request_key(request: Request) -> str:
    """De-duplication key: the canonical URL for GET and HEAD (a HEAD check
    of a URL is not a fetch of its body, so it is keyed apart)."""
    key = canonical_url(request.url)
    if request.method == "GET":
        return key
    if request.method == "HEAD":
        return "HEAD " + key
    # a stable digest: the key is written to JOBDIR and read by a later process
    # (hash() of bytes differs from one Python process to the next)
    return f"{request.method} {key} {hashlib.sha1(request.body).hexdigest()}"


class URLDupeFilter(BaseDupeFilter):
    """DUPEFILTER_CLASS for webspider (see module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.seen: set[str] = set()
        self.filtered = 0
        self._file: IO[str] | None = None
        directory = job_dir(crawler.settings)
        self._path = Path(directory) / SEEN_FILE if directory else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def open(self) -> None:
        if self._path is not None:
            if self._path.exists():
                with self._path.open(encoding="utf-8", errors="replace") as fh:
                    # A crash can leave a half-written last line; it is a
                    # prefix of a real URL and harmless in the set.
                    self.seen.update(line.rstrip("\n") for line in fh)
                logger.info("Resuming with %d URLs already seen", len(self.seen))
            self._file = self._path.open("a", encoding="utf-8")
        spider = self.crawler.spider
        if spider is not None and hasattr(spider, "seen_urls"):
            spider.seen_urls = self.seen

    def request_seen(self, request: Request) -> bool:
        key = request_key(request)
        if key in self.seen:
            return True
        self.seen.add(key)
        if self._file is not None:
            self._file.write(key.replace("\n", "%0A") + "\n")
        return False

    def log(self, request: Request, spider: object) -> None:
        # The scheduler calls this for every filtered request; count, don't log
        # (duplicates are the normal case on link-heavy sites).
        self.filtered += 1

    def close(self, reason: str) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.crawler.stats is not None:
            self.crawler.stats.set_value(STATS_FILTERED, self.filtered)
