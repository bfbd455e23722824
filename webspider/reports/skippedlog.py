"""Tell the user why URLs were not crawled.

Listens to ``webspider.signals.urls_skipped``: logs the first skipped URL per
reason and host at INFO, for at most ``WEBSPIDER_LOG_SKIPPED_MAX_HOSTS`` hosts
per reason (a documentation site links hundreds of external hosts; a line
for each would bury the log), then one line saying further hosts are only
counted. Every skip is counted in the stats by webspider.skips. With
``WEBSPIDER_LOG_SKIPPED`` (``-a log_skipped=1``) it also writes one JSON line
per distinct URL to ``<output>/skipped.jsonl`` (url, reason, referer) — what
``wget --rejected-log`` gives its users. A resumed crawl appends to the file
its earlier parts wrote (each URL still once), less their ``depth`` lines:
those are the URLs still deferred when a part ended (paused), which the
resumed crawl may fetch; what is still deferred at its own end is recorded
then (webspider.frontier.deferredleft).
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import IO, TYPE_CHECKING

from scrapy import signals as scrapy_signals

from webspider import signals
from webspider.config import get_output_dir
from webspider.keys import SKIPPED_FILE, STATS_STATE_RESUMED
from webspider.reports.options import ReportOptions
from webspider.skips import DEPTH, STATS_PREFIX
from webspider.storage import stop_crawl
from webspider.utils.atomic import write_atomic
from webspider.utils.url import host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class SkippedLog:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = ReportOptions.of(settings)
        self.write = options.log_skipped
        self.path = get_output_dir(settings) / SKIPPED_FILE
        self.max_hosts = options.log_skipped_max_hosts
        #: reason → hosts already named in the log for it
        self._logged: dict[str, set[str]] = {}
        self._written: set[str] = set()
        self._file: IO[str] | None = None
        crawler.signals.connect(self.urls_skipped, signal=signals.urls_skipped)
        crawler.signals.connect(
            self.crawl_state_opened, signal=signals.crawl_state_opened
        )
        crawler.signals.connect(self.spider_opened, signal=scrapy_signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=scrapy_signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def crawl_state_opened(self) -> None:
        """A resumed crawl goes on with the file of its earlier parts (it was
        written anew, and their skips lost): their URLs are not written
        again, and a line cut short by a kill is dropped."""
        stats = self.crawler.stats
        if self.write and stats is not None and stats.get_value(STATS_STATE_RESUMED):
            self._file = self._reopen()

    def _reopen(self) -> IO[str]:
        try:
            with self.path.open("rb") as f:
                kept = f.read()
        except FileNotFoundError:
            kept = b""
        kept = kept[: kept.rfind(b"\n") + 1]
        lines = []
        for line in kept.splitlines(keepends=True):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                record = json.loads(line)
                if record["reason"] == DEPTH:
                    continue
                self._written.add(record["url"])
            lines.append(line)
        if len(lines) < len(kept.splitlines()):
            # The URLs an earlier part left deferred when it paused: this
            # run fetches them or, at its end, records them again (the
            # scheduler records what is still deferred then).
            kept = b"".join(lines)
            write_atomic(self.path, kept.decode("utf-8", "replace"))
        file = self.path.open("a", encoding="utf-8", buffering=1)
        file.truncate(len(kept))
        return file

    def spider_opened(self) -> None:
        if self.write and self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Line-buffered: the file is complete up to the last skip even if
            # the crawl is killed.
            self._file = self.path.open("w", encoding="utf-8", buffering=1)

    def urls_skipped(
        self, skipped: list[tuple[str, str]], referer: str | None = None
    ) -> None:
        for url, reason in skipped:
            self.url_skipped(url, reason, referer)

    def url_skipped(self, url: str, reason: str, referer: str | None = None) -> None:
        hosts = self._logged.setdefault(reason, set())
        if len(hosts) <= self.max_hosts:
            host = host_of(url)
            if host not in hosts:
                hosts.add(host)
                if len(hosts) <= self.max_hosts:
                    logger.info(
                        "Not crawling %s (reason: %s); further URLs of host %r "
                        "skipped for this reason are only counted",
                        url,
                        reason,
                        host,
                    )
                else:
                    logger.info(
                        "Not crawling URLs of further hosts for reason %s either; "
                        "they are only counted (stats %s/%s)",
                        reason,
                        STATS_PREFIX,
                        reason,
                    )
        if self._file is not None and url not in self._written:
            self._written.add(url)
            record = {"url": url, "reason": reason, "referer": referer}
            try:
                self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            except OSError as exc:
                self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        """A write the disk refused stops the crawl (webspider.storage); the
        file is written no more (a resumed crawl goes on with it)."""
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()
        if not stop_crawl(self.crawler, exc, self.path):
            raise exc

    def spider_closed(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._failed(exc)
            self._file = None
