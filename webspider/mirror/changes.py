"""``<output>/changes.jsonl``: one line per URL and crawl saying whether it
is new, changed, unchanged or gone, and the file those lines go to.

The file is crash-safe as ``pages.jsonl`` is: its length is committed with
the records its lines describe (a record of namespace ``mirror.outputs``
keyed by the file's absolute path, as each worker of a shared state writes
its own, written on ``crawl_state_committing`` after the file is flushed and
fsynced), and a resumed crawl cuts it back to that length, so the lines of
pages that will be fetched again (their records were not committed) are not
there twice.

Apart from webspider.mirror.store, which decides each URL's change and
writes its line (``MirrorStore.record_change``, straight to ``fh``: no call
added a page), because opening, committing and closing the file is the
same whatever the mirror stores.

Stats: ``webspider/mirror/change_count/<change>``.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import IO, TYPE_CHECKING

from webspider.storage import stop_crawl

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future
    from pathlib import Path

    from scrapy.crawler import Crawler

    from webspider.mirror.safefs import Segments
    from webspider.records import Records, RecordStore

NEW, CHANGED, UNCHANGED, GONE = "new", "changed", "unchanged", "gone"
#: unchanged, and reported already by this run (a later round fetched it
#: again, or a resumed crawl): no line in changes.jsonl
SAME = "same"

STATS_CHANGES = "webspider/mirror/change_count"  # /<new|changed|unchanged|gone>
CHANGE_KEYS = {
    change: f"{STATS_CHANGES}/{change}" for change in (NEW, CHANGED, UNCHANGED, GONE)
}

#: how far the outputs the mirror writes got, committed with its records
NS_OUTPUTS = "mirror.outputs"

#: a string as ``json.dumps(value, ensure_ascii=False)`` writes it
_encode_text = json.encoder.encode_basestring


def change_line(url: str, change: str, path: Segments | None) -> str:
    """changes.jsonl's line: ``json.dumps({"url": url, "change": change,
    "path": "/".join(path) or None}, ensure_ascii=False)`` and a newline,
    the same text without the dict and the encoder's walk (a line a page)."""
    where = _encode_text("/".join(path)) if path else "null"
    text = _encode_text
    return f'{{"url": {text(url)}, "change": {text(change)}, "path": {where}}}\n'


def named(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` (a write's error names no file): the line
    that stops the crawl says which (webspider.storage)."""
    if exc.filename is None:
        exc.filename = str(path)
    return exc


class ChangesFile:
    """changes.jsonl at ``path``: ``fh`` once opened, None before and after."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: its record in NS_OUTPUTS: the file's absolute path, as the
        #: workers of a shared state each write their own
        self.key = str(path.resolve())
        self.fh: IO[bytes] | None = None
        #: the thread the fsyncs run in (commit)
        self._fsync: ThreadPoolExecutor | None = None

    def open(self, resumed: bool, outputs: Records, shared: bool = False) -> None:
        """Open the file, cut back to its committed length when resumed."""
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        committed = outputs.get(self.key) if resumed else 0
        if committed is None and shared:
            # a worker joining a shared crawl's run it wrote nothing for yet:
            # its file holds an earlier run's changes, as pages.jsonl does
            committed = 0
        if committed is None or not path.exists():  # from before the record
            self.fh = path.open("ab")
            return
        fh = path.open("r+b")
        fh.truncate(min(int(committed), fh.seek(0, os.SEEK_END)))
        fh.seek(0, os.SEEK_END)
        outputs.put(self.key, fh.tell())
        self.fh = fh

    def commit(
        self, records: RecordStore, flush: Callable[[], None] | None = None
    ) -> None:
        """Commit the file's length with the records its lines describe,
        calling ``flush`` (the state's buffers written) while it is fsynced."""
        fh = self.fh
        syncing: Future[None] | None = None
        if fh is not None:
            try:
                fh.flush()
            except OSError as exc:
                raise named(exc, self.path) from None
            # the fsync waits for the disk (1-10 ms, without the GIL) in a
            # thread while the state's buffers are written, as pages.jsonl's
            # (webspider.frontier.pages)
            if self._fsync is None:
                self._fsync = ThreadPoolExecutor(
                    1, thread_name_prefix="webspider-mirror"
                )
            syncing = self._fsync.submit(os.fsync, fh.fileno())
        try:
            if flush is not None:
                flush()
        finally:
            if syncing is not None:
                try:
                    syncing.result()
                except OSError as exc:
                    raise named(exc, self.path) from None
        if fh is not None:
            records.records(NS_OUTPUTS).put(self.key, fh.tell())

    def close(self, crawler: Crawler) -> None:
        """Close the file; an error closing it stops the crawl."""
        if self._fsync is not None:
            self._fsync.shutdown()
            self._fsync = None
        fh, self.fh = self.fh, None
        if fh is None:
            return
        try:
            fh.close()
        except OSError as exc:
            if not stop_crawl(crawler, exc, self.path):
                raise
