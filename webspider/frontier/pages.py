"""``pages.jsonl``, written so that a crash never loses or repeats a page.

A page's line is not written when its item is scraped but when its lease is
acknowledged (webspider.frontier.scheduler): the lines of the pages done
since the last commit are written, flushed and fsynced, and the file's length
is committed in the crawl state in the same transaction as those pages'
acks. A resumed crawl first truncates the file to the committed length — a
partial last line from a kill goes with it — so each page is in the file
exactly once however often the crawl was killed: pages done after the last
commit are fetched again, and their lines written then. With the length goes
a digest of the file's last committed line (``tail``), so that a file another
crawl wrote over since is told apart from this crawl's, however long it is
(webspider.frontier.resume refuses to continue then).

The fsync runs beside the commit's other work: ``start_sync`` flushes the
lines and fsyncs them in a thread (``os.fsync`` waits for the disk without
the GIL) while the features write what they keep with the commit
(webspider.signals.crawl_state_committing: a few milliseconds of CPU a
commit, where the fsync took 1-3 ms of waiting on this machine); ``sync``
then waits for it before the length goes into the commit, so the file is
on disk before the crawl state says how long it is, as before.

The lines are those of Scrapy's ``jsonlines`` feed (JsonLinesItemExporter,
FEED_EXPORT_ENCODING). With ``-o``/``-O``/``FEEDS`` set, Scrapy's feed
exporter writes instead, buffered and not crash-safe, and this file is not
written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import IO, TYPE_CHECKING, Any

from scrapy.exporters import JsonLinesItemExporter

from webspider.items import PageItem

if TYPE_CHECKING:
    from concurrent.futures import Future
    from pathlib import Path

logger = logging.getLogger(__name__)


_PAGE_FIELDS = tuple(f.name for f in dataclasses.fields(PageItem))

#: the crawl state's meta name of the digest ``tail`` gives (an embedded
#: state's: a shared one's workers each write their own file)
META_PAGES_TAIL = "tail:pages.jsonl"

#: bytes of the last line ``tail`` digests, at most
_TAIL = 256


def tail_digest(data: bytes) -> str:
    """What ``tail`` says of the bytes that end the file: their length and
    SHA-1."""
    return f"{len(data)}:{hashlib.sha1(data).hexdigest()}"


def tail_matches(path: Path, offset: int, tail: str) -> bool:
    """Whether the file at ``path`` holds, just before ``offset``, the bytes
    ``tail`` (a ``tail_digest``) describes."""
    size, _, _ = tail.partition(":")
    try:
        n = int(size)
        with path.open("rb") as fh:
            fh.seek(offset - n)
            data = fh.read(n)
    except (OSError, ValueError):
        return False
    return tail_digest(data) == tail


class PagesFile:
    """``PagesFile(path, offset)``: open ``path`` for appending after its
    first ``offset`` bytes (0: a new file, any earlier one replaced)."""

    def __init__(self, path: Path, offset: int = 0, encoding: str = "utf-8") -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fh: IO[bytes] = path.open("r+b" if offset and path.exists() else "wb")
        size = fh.seek(0, os.SEEK_END)
        if size < offset:
            logger.warning(
                "%s is shorter (%d bytes) than the crawl state says (%d): "
                "pages written before may be missing from it",
                path,
                size,
                offset,
            )
            offset = size
        fh.truncate(offset)
        fh.seek(offset)
        self._fh = fh
        self.offset = offset
        self._buffer = io.BytesIO()
        self._exporter = JsonLinesItemExporter(self._buffer, encoding=encoding)
        self._encode = self._exporter.encoder.encode
        self._encoding = self._exporter.encoding or "utf-8"
        #: the fsync ``start_sync`` started, and the length it makes durable
        self._syncing: Future[None] | None = None
        self._syncing_to = offset
        self._fsync: ThreadPoolExecutor | None = None
        #: the last line written since ``tail`` was last asked
        self._last = b""

    def line(self, item: Any) -> bytes:
        """``item`` as one JSON line: the exporter's bytes. A PageItem (no
        field serializers, every field exported in declaration order) is
        encoded straight from its fields, without the exporter's ItemAdapter,
        per-field serializer calls and buffer: the same encoder, the same
        bytes (tests/test_frontier_pages.py compares them)."""
        if type(item) is PageItem:
            fields = {name: getattr(item, name) for name in _PAGE_FIELDS}
            return (self._encode(fields) + "\n").encode(self._encoding)
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        self._exporter.export_item(item)
        return buffer.getvalue()

    def write(self, lines: list[bytes]) -> None:
        try:
            for line in lines:
                self._fh.write(line)
        except OSError as exc:
            self._name(exc)
            raise
        if lines:
            self._last = lines[-1]

    def _name(self, exc: OSError) -> None:
        """Have ``exc`` (a write's or an fsync's, which name no file) name
        this one: the line that stops the crawl says which
        (webspider.storage)."""
        if exc.filename is None:
            exc.filename = str(self.path)

    def tail(self) -> str | None:
        """The digest (``tail_digest``) of the last line written since this
        was last asked, up to its last 256 bytes; None when none was."""
        last = self._last
        if not last:
            return None
        self._last = b""
        return tail_digest(last[-_TAIL:])

    def start_sync(self) -> None:
        """Flush what was written and fsync it in a thread (``sync`` waits
        for it): the caller does other work meanwhile."""
        if self._syncing is not None:
            return
        fh = self._fh
        try:
            fh.flush()
        except OSError as exc:
            self._name(exc)
            raise
        if self._fsync is None:
            self._fsync = ThreadPoolExecutor(1, thread_name_prefix="webspider-pages")
        self._syncing_to = fh.tell()
        self._syncing = self._fsync.submit(os.fsync, fh.fileno())

    def sync(self) -> int:
        """Flush and fsync what was written (waiting for ``start_sync``'s
        fsync, and doing one more only for lines written since); the
        file's length."""
        fh = self._fh
        try:
            fh.flush()
            length = fh.tell()
            syncing = self._syncing
            if syncing is not None:
                self._syncing = None
                syncing.result()  # its error, if any, is the caller's
            if syncing is None or length > self._syncing_to:
                os.fsync(fh.fileno())
        except OSError as exc:
            self._name(exc)
            raise
        self.offset = length
        return length

    def close(self) -> None:
        try:
            self.sync()
        finally:
            self._close()

    def abandon(self) -> None:
        """Close, its error ignored (a write the disk refused stopped the
        crawl): the file stays as a kill leaves it, longer than its
        committed length at most, and a resumed crawl cuts it back."""
        with contextlib.suppress(OSError):
            self._close()

    def _close(self) -> None:
        try:
            if self._fsync is not None:
                self._fsync.shutdown()
                self._fsync = None
        finally:
            self._fh.close()
