"""A pipeline for crash tests: kills the crawl at an exact moment in the
life of one page, which the server cannot see from outside.

``-s ITEM_PIPELINES={"tests.support.hold.KillAfterMirror": 950}`` (after the
mirror's, 900) with ``-s TEST_KILL_PATH=/p/3``: when that page's item gets
here (its file written and its records put in the crawl state, its lease not
yet acknowledged), the crawl is killed with SIGKILL —

- ``-s TEST_KILL_WHEN=committed``: once the crawl state has committed the
  page's mirror record (by the acknowledgements of other pages, as a commit
  is due every second or 32 acks by default), its own ack not: the page is fetched
  again by the resumed crawl, with a record of this run;
- ``-s TEST_KILL_WHEN=now`` (default): at once, its records not committed.

The item is held meanwhile (the page stays in progress), polling the state
file read-only: a committed record is the event waited for, not a delay.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter

from webspider.config import get_output_dir
from webspider.utils.sitecodes import site_of
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.crawler import Crawler
    from typing_extensions import Self

STATE = ".webspider-state.sqlite3"


def mirror_record_committed(state: Path, url: str) -> bool:
    """Whether the crawl state at ``state`` has committed ``url``'s index
    record (read-only: what a process opening it after a kill finds)."""
    url = canonical_url(url)
    site = site_of(url)
    db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
    try:
        # the index is keyed by <site code><path> (the crawl's site codes)
        row = db.execute(
            "SELECT 1 FROM record r JOIN namespace i ON i.name = 'mirror.index'"
            " JOIN namespace s ON s.name = 'urls.sites'"
            " JOIN record c ON c.key = char(s.id) || ?"
            " WHERE r.key = char(i.id) || CAST(c.value AS TEXT) || ?",
            (site, url[len(site) :]),
        ).fetchone()
    except sqlite3.OperationalError:  # not created yet
        row = None
    finally:
        db.close()
    return row is not None


class KillAfterMirror:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.path = settings.get("TEST_KILL_PATH")
        self.when = settings.get("TEST_KILL_WHEN", "now")
        self.state = get_output_dir(settings) / STATE

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        url = str(ItemAdapter(item).get("url") or "")
        if not self.path or not url.endswith(self.path):
            return item
        if self.when == "committed":
            while not mirror_record_committed(self.state, url):
                await asyncio.sleep(0.02)
        os.kill(os.getpid(), signal.SIGKILL)
        return item


def committed_offset(state: Path) -> str | None:
    """pages.jsonl's length as the crawl state last committed it."""
    db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT value FROM meta WHERE name = 'offset:pages.jsonl'"
        ).fetchone()
    finally:
        db.close()
    return row[0] if row else None


class KillInDownloader:
    """A downloader middleware (``-s DOWNLOADER_MIDDLEWARES=…: 800``, after
    Scrapy's DownloaderStats counted the response, 850) that holds the
    response of ``TEST_KILL_PATH`` until the crawl state commits again
    (pages.jsonl's committed length moves: other pages were acknowledged),
    then kills the crawl: a commit while a response is still in the
    downloader middlewares, as the page worker holds it while it reads it."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.path = settings.get("TEST_KILL_PATH")
        self.state = get_output_dir(settings) / STATE

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_response(self, request: Any, response: Any) -> Any:
        if not self.path or not request.url.endswith(self.path):
            return response
        before = committed_offset(self.state)
        while committed_offset(self.state) == before:
            await asyncio.sleep(0.02)
        os.kill(os.getpid(), signal.SIGKILL)
        return response
