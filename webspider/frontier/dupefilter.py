"""The crawl's seen-set: each canonical URL is requested at most once.

Keyed on the canonical URL string (webspider.utils.url.canonical_url) rather
than on Scrapy's sha1 request fingerprint: as cheap to compare, much cheaper
to compute, and the same key the spider uses to drop already-seen links
before it builds Requests for them.

The keys are kept in two SeenSets (webspider.frontier.seen): the canonical
URLs of GET requests, and the keys of other methods (``HEAD <url>`` of a
link check, ``POST <url> <digest>``), which only this filter reads. Apart,
``len`` of the first is the count of distinct URLs the report shows, with
no scan of the keys (which a store could not afford).

This filter is the only one to add. Everyone else gets the URLs' read-only
view (``urls``, a SeenKeys) with ``seen_urls(crawler)``: it asks the crawler
for its engine's scheduler and that scheduler's ``df``, both public in
Scrapy 2.19 (``ExecutionEngine.scheduler``, ``Scheduler.df``), so no
component pushes an attribute onto another (this filter used to set
``spider.seen_urls``) and none reads the engine's private slot. A function
taking the crawler, rather than an attribute set on the spider, also works
for readers that are not the spider (the reports) and answers None, rather
than a stale or empty set, when the crawl's DUPEFILTER_CLASS is another.

Start URLs go through it too (Scrapy's default start requests bypass the
filter, so a start page that other pages link to would be fetched twice).

With JOBDIR every new key is appended to ``<JOBDIR>/webspider-seen.txt`` (in
the order requested, both sets in one file) and read back when the job
resumes.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import IO, TYPE_CHECKING

from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.job import job_dir

from webspider.frontier.seen import MemorySeenSet
from webspider.keys import SEEN_FILE, STATE_FILE
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

    from webspider.frontier.seen import SeenKeys, SeenSet

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


def is_url_key(key: str) -> bool:
    """Whether a key (as request_key makes them) is a GET's: a bare canonical
    URL, which never holds a space; other methods' keys start "METHOD "."""
    return " " not in key


def seen_urls(crawler: Crawler) -> SeenKeys | None:
    """The canonical URLs the crawl has requested with GET (fetched, queued
    or filtered on the way), for the spider and the reports.

    None before the engine has opened the scheduler, or when the crawl's
    scheduler or DUPEFILTER_CLASS is not webspider's (nothing is known then).
    Still answers in spider_closed handlers: the engine drops the scheduler
    only after that signal."""
    try:
        engine = crawler.engine
    except RuntimeError:  # not set before the crawl starts (Scrapy 2.19)
        return None
    return dupefilter_urls(getattr(engine.scheduler, "df", None))


def dupefilter_urls(dupefilter: object) -> SeenKeys | None:
    """The URLs seen by ``dupefilter`` when it is a URLDupeFilter, else None."""
    return dupefilter.urls if isinstance(dupefilter, URLDupeFilter) else None


class URLDupeFilter(BaseDupeFilter):
    """DUPEFILTER_CLASS for webspider (see module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        # In memory, persisted by the JOBDIR journal (see module docstring).
        self._urls: SeenSet = MemorySeenSet()
        #: keys of other methods ("HEAD <url>", "POST <url> <digest>")
        self._other_keys: SeenSet = MemorySeenSet()
        self.filtered = 0
        self._file: IO[str] | None = None
        directory = job_dir(crawler.settings)
        self._path = Path(directory) / SEEN_FILE if directory else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def urls(self) -> SeenKeys:
        """The canonical URLs of GET requests seen: what the rest of the
        crawl reads (through ``seen_urls``), live from open() on."""
        return self._urls.view()

    def open(self) -> None:
        if self._path is not None:
            if self._path.exists():
                with self._path.open(encoding="utf-8", errors="replace") as fh:
                    # A crash can leave a half-written last line; it is a
                    # prefix of a real key and harmless in the set.
                    keys = [line.rstrip("\n") for line in fh]
                self._urls = MemorySeenSet(key for key in keys if is_url_key(key))
                self._other_keys = MemorySeenSet(
                    key for key in keys if not is_url_key(key)
                )
                logger.info(
                    "Resuming with %d URLs already seen",
                    len(self._urls) + len(self._other_keys),
                )
            self._file = self._path.open("a", encoding="utf-8")

    def request_seen(self, request: Request) -> bool:
        key = request_key(request)
        seen = self._urls if is_url_key(key) else self._other_keys
        if not seen.add(key):
            return True
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
