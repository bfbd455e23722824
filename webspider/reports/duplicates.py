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

The index is kept in the crawl state as records (webspider.records):
``reports.content`` (``e`` or ``n`` and 96 bits of the SHA-256 in base64
→ the first URL's code: webspider.utils.urlcodes.UrlCodes, the crawl's
shared codes, 4 characters where its ``<site code><path>`` took ~20),
``reports.duplicates`` (URL → ``[first URL, kind]``) and
``reports.duplicate_totals`` (counts per kind). So memory stays flat, a
resumed crawl continues the index (a page fetched again after a kill is not
its own duplicate, nor counted twice), and a new crawl on a state whose
crawl finished starts empty. Without a crawl state it is kept in memory.

Settings: WEBSPIDER_DUPLICATES_ENABLED, WEBSPIDER_DUPLICATES_NORMALIZE,
WEBSPIDER_DUPLICATES_IGNORE_RE.
Stats: ``webspider/duplicates/page_count`` (``/exact``, ``/normalized``), for
the whole crawl (a resumed one included).
"""

from __future__ import annotations

import logging
from binascii import b2a_base64
from itertools import islice
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.http import TextResponse

from webspider import signals
from webspider.keys import STATS_DUPLICATES, STATS_STATE_RESUMED
from webspider.page.response import is_html
from webspider.records import MemoryRecordStore
from webspider.reports.fingerprint import EXACT, NORMALIZED, normalized_hash
from webspider.reports.options import ReportOptions
from webspider.utils.urlcodes import UrlCodes

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from webspider.records import RecordStore

logger = logging.getLogger(__name__)

NS_CONTENT = "reports.content"
NS_DUPLICATES = "reports.duplicates"
NS_TOTALS = "reports.duplicate_totals"


def _content_key(kind: str, digest: str) -> str:
    """The key of a content hash in ``reports.content``: the kind's initial
    and 12 bytes (96 bits) of the SHA-256 in base64, 17 characters where
    the hex digest and the kind took 70 (one row a page while the crawl
    runs). Two contents share a key with a probability of about n²/2⁹⁷
    (10⁻¹⁵ for ten million pages)."""
    try:
        raw = bytes.fromhex(digest)
    except ValueError:
        return f"{kind}:{digest}"
    return kind[0] + b2a_base64(raw[:12], newline=False).decode("ascii")


class DuplicateContent:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = ReportOptions.of(settings)
        if not options.duplicates:
            raise NotConfigured
        self.normalize = options.duplicates_normalize
        self.ignore = options.duplicates_ignore
        self.open(MemoryRecordStore())
        crawler.signals.connect(
            self.crawl_state_opened, signal=signals.crawl_state_opened
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def open(self, store: RecordStore) -> None:
        """Keep the index in ``store`` from now on."""
        self._content = store.records(NS_CONTENT)
        self._found = store.records(NS_DUPLICATES)
        self._totals = store.records(NS_TOTALS)
        self._codes = UrlCodes.of(store)
        self.counts = {
            kind: int(self._totals.get(kind) or 0) for kind in (EXACT, NORMALIZED)
        }

    def crawl_state_opened(self, records: RecordStore) -> None:
        self.open(records)
        stats = self.crawler.stats
        if stats is None or not stats.get_value(STATS_STATE_RESUMED):
            for namespace in (self._content, self._found, self._totals):
                namespace.clear()
            self.counts = dict.fromkeys(self.counts, 0)
        self._update_stats()

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def found(self, limit: int | None = None) -> Iterator[tuple[str, str, str]]:
        """(URL, first URL, kind) of the duplicates, in URL order, streamed."""
        rows = self._found.items()
        for url, (first, kind) in islice(rows, limit):
            yield url, first, kind

    def duplicate_of(self, response: Response, content_hash: str) -> str | None:
        """The URL that served this content first, or None (remembered then)."""
        if not response.body:
            return None
        url = response.url
        first = self._first_url(EXACT, content_hash, url)
        kind = EXACT
        if self.normalize and isinstance(response, TextResponse) and is_html(response):
            digest = normalized_hash(response.text, self.ignore)
            near = self._first_url(NORMALIZED, digest, url)
            if first is None and near is not None:
                first, kind = near, NORMALIZED
        if first is None:
            return None
        if self._found.put_new(url, [first, kind]):
            self.counts[kind] = self._totals.incr(kind)
            self._update_stats()
        return first

    def _first_url(self, kind: str, digest: str, url: str) -> str | None:
        """The URL that had ``digest`` first, or None when ``url`` is the
        first (it is remembered then)."""
        key = _content_key(kind, digest)
        # one insert-if-absent a page (most pages are new content), read
        # back only for a duplicate: was a read and a write a page
        if self._content.put_new(key, self._codes.give([url])[url]):
            return None
        stored = self._content.get(key)
        first = None if stored is None else self._codes.urls([str(stored)])[0]
        return None if first == url else first

    def _update_stats(self) -> None:
        stats = self.crawler.stats
        if stats is None or not self.count:
            return
        stats.set_value(STATS_DUPLICATES, self.count)
        for kind, n in self.counts.items():
            stats.set_value(f"{STATS_DUPLICATES}/{kind}", n)
