"""The mirror: a folder of the site as fetched, browsable offline.

This extension is the crawl-wide service the mirror pipeline
(webspider.mirror.pipeline) and the update middleware
(webspider.mirror.update) share: it owns the folder
(webspider.mirror.safefs.SafeTree, which never writes outside it nor through
a symlink), the state of what was stored (webspider.mirror.state,
``<output>/mirror-state.jsonl``) and ``<output>/changes.jsonl``. It converts
links as each page is written, fixes up at the start (a resumed crawl) and at
the end of the crawl the links to files that were mirrored later, and
reports URLs that are gone when a crawl finishes.

Settings: ``WEBSPIDER_MIRROR`` (folder, ``0`` = off), ``WEBSPIDER_MIRROR_*``;
see docs/mirror.md. Stats: ``webspider/mirror/*``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import zlib
from array import array
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from scrapy import signals
from scrapy.exceptions import NotConfigured

from webspider.config import get_output_dir
from webspider.keys import (
    CHANGES_FILE,
    MIRROR_STATE_FILE,
    PAGES_FILE,
    STATS_STATE_RESUMED,
)
from webspider.mirror.links import (
    Conversion,
    convert,
    fix_up,
    needs_fix_up,
    unconvert,
)
from webspider.mirror.options import MirrorOptions
from webspider.mirror.paths import conflict_name, original_path, url_path
from webspider.mirror.safefs import SafeTree, Segments, UnsafePathError
from webspider.mirror.state import Entry, MirrorState
from webspider.page.response import CSS_TYPES, is_html, media_type, parsed_page
from webspider.page.scan import (
    Span,
    ascii_compatible,
    pack_spans,
    unpack_spans,
)
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

logger = logging.getLogger(__name__)


NEW, CHANGED, UNCHANGED, GONE = "new", "changed", "unchanged", "gone"

#: links whose place in written pages is remembered for the fix-up (24
#: bytes each: 48 MB at most)
SPAN_BUDGET = 2_000_000

STATS_WRITTEN = "webspider/mirror/written_count"
STATS_BYTES = "webspider/mirror/written_bytes_count"
STATS_NOT_MODIFIED = "webspider/mirror/not_modified_count"
STATS_CONVERTED = "webspider/mirror/converted_links_count"
STATS_FIXED = "webspider/mirror/fixed_up_count"
STATS_REFUSED = "webspider/mirror/refused_count"
STATS_CHANGES = "webspider/mirror/change_count"  # /<new|changed|unchanged|gone>


HTML, CSS = "html", "css"


class PageWriter(Protocol):
    """Another writer of the mirror's pages: one that read a page may hold
    it and write it itself, so its bytes need not cross again (the page
    worker, webspider.pageworker, attaches itself as one). It converts links
    with a copy of the mirror's state, kept current through ``index`` and
    ``alias``."""

    def start_mirror(
        self,
        root: str,
        forbidden: list[Segments],
        entries: list[tuple[str, Segments]],
        aliases: dict[str, str],
    ) -> bool:
        """Write the mirror at ``root`` from now on, knowing where the state
        has put each URL so far; whether it will."""

    def holds(self, response: Response) -> bool:
        """Whether it holds ``response``'s page, and can store it."""

    async def store(
        self, response: Response, entry: Entry, convert: bool
    ) -> tuple[Segments, Conversion | None] | None:
        """Convert (when ``convert``) and write the page it holds for
        ``response`` at ``entry.path``: the path written and the conversion,
        or None (store it here). Raises UnsafePathError or OSError when the
        write was refused."""

    def forget(self, response: Response) -> None:
        """``response``'s page need not be kept any longer."""

    def index(self, url: str, path: Segments | None) -> None:
        """The state says ``url`` is now at ``path`` (None: nowhere)."""

    def alias(self, url: str, target: str) -> None:
        """The state says ``url`` is stored as ``target``'s file."""


def kind_of(response: Response) -> str:
    """ "html" or "css" for what has links to convert, "" otherwise."""
    if is_html(response):
        return HTML
    return CSS if media_type(response) in CSS_TYPES else ""


class MirrorStore:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = MirrorOptions.of(settings)
        if options.root is None:
            raise NotConfigured
        self.root: Path = options.root
        output = get_output_dir(settings)
        self.convert = options.convert_links
        self.keep_originals = options.keep_originals
        self.update = options.update
        self.thread_size = options.thread_size
        self.state_path = output / MIRROR_STATE_FILE
        self.changes_path = output / CHANGES_FILE
        own = [
            str(self.state_path),
            str(self.changes_path),
            str(output / PAGES_FILE),
        ]
        own += [str(p) for p in settings.getdict("FEEDS") if "://" not in str(p)]
        if settings.get("JOBDIR"):
            own.append(str(settings["JOBDIR"]))
        self.own_files = [Path(p) for p in own]
        self.tree: SafeTree | None = None
        self.state: MirrorState | None = None
        self._changes: IO[str] | None = None
        #: this crawl's run number (kept when a JOBDIR crawl is resumed)
        self.run = 0
        self._reported: set[str] = set()
        #: URL → the entry it had, while its new file is being written
        self._replacing: dict[str, Entry | None] = {}
        #: URL → (CRC-32 of its file, where its pending links are in it), so
        #: the fix-up of a page written by this process needs no scan; kept
        #: for at most SPAN_BUDGET links in all (beyond, pages are scanned)
        self._spans: dict[str, tuple[int, array[int]]] = {}
        self._span_count = 0
        #: another writer of pages it read (see attach and store_in_worker)
        self.writer: PageWriter | None = None
        self._attached: PageWriter | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def attach(self, writer: PageWriter) -> None:
        """Let ``writer`` store the pages it holds, once the state is read."""
        self._attached = writer
        if self.state is not None:
            self._start_writer()

    # -- lifecycle ---------------------------------------------------------------
    def _forbidden(self) -> list[Segments]:
        """The crawl's own files, as paths inside the mirror (when the user
        put them there): never written."""
        root = self.root.resolve()
        out: list[Segments] = []
        for own in self.own_files:
            path = own.expanduser().resolve()
            if root in path.parents:
                out.append(path.relative_to(root).parts)
        return out

    def spider_opened(self) -> None:
        self.tree = SafeTree(self.root, self._forbidden())
        self.state = state = MirrorState(self.state_path, str(self.root.resolve()))
        # A crawl that was interrupted goes on where it stopped (the scheduler
        # opened its crawl state, before this): the URLs it fetched before
        # count as seen by this crawl.
        stats = self.crawler.stats
        continued = bool(stats is not None and stats.get_value(STATS_STATE_RESUMED))
        resumed = continued and not state.finished and state.run > 0
        self.run = state.run if resumed else state.run + 1
        state.start_run(self.run)
        self.changes_path.parent.mkdir(parents=True, exist_ok=True)
        mode = "a" if resumed else "w"
        self._changes = self.changes_path.open(mode, encoding="utf-8", buffering=1)
        # An interrupted crawl left pages waiting for files mirrored later.
        self.fix_up_pages()
        self._start_writer()

    def _start_writer(self) -> None:
        writer, state = self._attached, self.state
        if writer is None or state is None or self.writer is not None:
            return
        if writer.start_mirror(
            str(self.root),
            self._forbidden(),
            [(url, entry.path) for url, entry in state.entries.items()],
            state.aliases,
        ):
            # the writer converts with a copy of the state: kept up to date
            state.on_index, state.on_alias = writer.index, writer.alias
            self.writer = writer

    def spider_closed(self, reason: str) -> None:
        if self.state is None:
            return
        started = time.monotonic()
        fixed = self.fix_up_pages()
        if fixed:
            logger.info(
                "Mirror: links fixed up in %d pages in %.2f s",
                fixed,
                time.monotonic() - started,
            )
        finished = reason == "finished"
        if finished:
            for entry in self.state:
                if not entry.gone and entry.run != self.run:
                    entry.gone = True
                    self.state.put(entry)
                    self.record_change(entry.url, GONE, entry.path)
        if self._changes is not None:
            self._changes.close()
        self.state.close(finished)
        if self.tree is not None:
            self.tree.close()

    def seen(self, entry: Entry) -> None:
        """``entry`` was fetched by this crawl (so it is not gone)."""
        assert self.state is not None
        if entry.run != self.run or entry.gone:
            entry.run, entry.gone = self.run, False
            self.state.put(entry)

    def _inc(self, key: str, count: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key, count)

    def record_change(self, url: str, change: str, path: Segments | None) -> None:
        """One line in changes.jsonl per URL and crawl: a URL fetched again
        (a later round) and found the same is not reported twice."""
        if url in self._reported and change == UNCHANGED:
            return
        self._reported.add(url)
        if self._changes is not None:
            line = {
                "url": url,
                "change": change,
                "path": "/".join(path) if path else None,
            }
            self._changes.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._inc(f"{STATS_CHANGES}/{change}")

    # -- update crawls -----------------------------------------------------------
    def stored(self, url: str) -> Entry | None:
        """The stored copy of ``url`` if its file is still there."""
        if self.state is None or self.tree is None:
            return None
        entry = self.state.entries.get(canonical_url(url))
        if entry is None or not self.tree.exists(entry.path):
            return None
        return entry

    def stored_body(self, entry: Entry, url: str) -> bytes:
        """The stored bytes of ``entry`` as the site sent them, near enough
        to extract the same links: converted links are turned back into the
        absolute URLs they stand for. Empty for what has no links."""
        assert self.tree is not None and self.state is not None
        if not entry.kind:
            return b""  # nothing with links: the spider needs no body
        body = self.tree.read(entry.path) or b""
        if not entry.converted:
            return body
        original = self.tree.read(original_path(entry.path))
        if original is not None:
            return original
        return unconvert(
            body,
            entry,
            self.state,
            page_url=url,
            encoding=entry.encoding,
            html=entry.kind == HTML,
        )

    def not_modified(self, response: Response, entry: Entry) -> None:
        """A 304: keep the stored file, refresh its validators."""
        assert self.state is not None
        etag = _header(response, b"ETag") or entry.etag
        modified = _header(response, b"Last-Modified") or entry.last_modified
        if (etag, modified) != (entry.etag, entry.last_modified):
            entry.etag, entry.last_modified = etag, modified
            self.state.put(entry)
        self._inc(STATS_NOT_MODIFIED)

    # -- storing -----------------------------------------------------------------
    def claim(self, url: str, path: Segments) -> Segments:
        """``path`` unless another URL owns that name (or one differing only
        in case), then a name with a hash of the URL."""
        assert self.state is not None and self.tree is not None
        for _ in range(4):
            path = self.tree.plan(path)
            owner = self.state.owner(path)
            if owner is None or owner == url:
                return path
            tag = hashlib.sha256(url.encode()).hexdigest()[:8]
            path = (*path[:-1], conflict_name(path[-1], tag))
        raise UnsafePathError(f"no free name for {url}")

    def prepare(self, response: Response, digest: str) -> tuple[Entry, str, bool]:
        """What to store for ``response``: its entry, the change, and whether
        a file is to be written (not when the stored file has these bytes)."""
        assert self.state is not None and self.tree is not None
        url = canonical_url(response.url)
        kind = kind_of(response)
        old = self.state.entries.get(url)
        headers: dict[str, str | None] = {
            "content_type": _header(response, b"Content-Type"),
            "etag": _header(response, b"ETag"),
            "last_modified": _header(response, b"Last-Modified"),
        }
        body = response.body
        if old is not None and old.hash == digest and self.tree.exists(old.path):
            if any(getattr(old, k) != v for k, v in headers.items()):
                for k, v in headers.items():
                    setattr(old, k, v)
                self.state.put(old)
            self.seen(old)
            return old, UNCHANGED, False
        if old is None or old.gone:
            change = NEW
        else:  # same bytes but the file went missing: written again, unchanged
            change = UNCHANGED if old.hash == digest else CHANGED
        path = old.path if old is not None else None
        if path is not None and self.state.owner(path) not in (url, None):
            path = None  # it shared its twin's file (below) but differs now
        entry = Entry(url=url, path=(), hash=digest, size=len(body), run=self.run)
        entry.kind = kind
        entry.encoding = getattr(response, "encoding", None)
        for k, v in headers.items():
            setattr(entry, k, v)
        if path is None:
            planned = self.tree.plan(url_path(response.url, kind == HTML))
            twin = self.twin(url, planned, digest)
            if twin is not None:
                # "/" and "/index.html": the same bytes want the same name;
                # one file serves both (links to either already open it)
                entry.path, entry.converted = twin.path, twin.converted
                entry.pending, entry.kept = twin.pending, twin.kept
                entry.restore = twin.restore
                self.state.put(entry)
                return entry, change, False
            path = self.claim(url, planned)
        entry.path = path
        # known before converting (the page may link to itself), recorded
        # only once written (``written``), forgotten if not (``abandon``)
        self._replacing[url] = self.state.reserve(entry)
        return entry, change, True

    def twin(self, url: str, path: Segments, digest: str) -> Entry | None:
        """Another URL already stored at ``path`` with the same bytes."""
        assert self.state is not None and self.tree is not None
        owner = self.state.owner(path)
        twin = self.state.entries.get(owner) if owner and owner != url else None
        if twin is None or twin.hash != digest or not self.tree.exists(path):
            return None
        return twin

    def needs_conversion(self, entry: Entry) -> bool:
        return self.convert and entry.kind != ""

    def store_file(
        self, response: Response, entry: Entry
    ) -> tuple[Segments, Conversion | None]:
        """Convert (when needed) and write the file of ``entry``. Touches no
        shared state, so it may run in a thread; ``written`` records it."""
        assert self.tree is not None
        body = response.body
        conversion = (
            self.render(response, entry) if self.needs_conversion(entry) else None
        )
        if conversion is None or conversion.data == body:
            return self.tree.write(entry.path, body), conversion
        used = self.tree.write(entry.path, conversion.data)
        if self.keep_originals:
            self.tree.write(original_path(used), body)
        return used, conversion

    async def store_in_worker(
        self, response: Response, entry: Entry
    ) -> tuple[Segments, Conversion | None] | None:
        """``store_file`` by the attached writer, when it holds the page (it
        read it): the page's bytes and scan need not cross again. None:
        store it here."""
        writer = self.writer
        if writer is None or not writer.holds(response):
            return None
        return await writer.store(response, entry, self.needs_conversion(entry))

    def forget(self, response: Response) -> None:
        """The attached writer need not keep ``response``'s page any longer."""
        if self.writer is not None:
            self.writer.forget(response)

    def render(self, response: Response, entry: Entry) -> Conversion:
        """The converted bytes of a page or stylesheet (reads the state only)."""
        assert self.state is not None
        html = entry.kind == HTML
        page = parsed_page(response, self.crawler.spider) if html else None
        return convert(
            response.body,
            self.state,
            entry.path,
            page_url=response.url,
            base_url=page.base_url if page is not None else response.url,
            encoding=getattr(response, "encoding", None),
            html=html,
            page=page,
        )

    def written(
        self, entry: Entry, used: Segments, change: str, conversion: Conversion | None
    ) -> None:
        """Record a file ``store_file`` wrote (on the reactor thread)."""
        assert self.state is not None
        self._replacing.pop(entry.url, None)
        entry.path = used  # differs when the tree changed under us
        if conversion is not None:
            entry.converted = conversion.count > 0
            entry.pending = sorted(conversion.pending)
            entry.kept = conversion.kept
            entry.restore = conversion.restore
            self._inc(STATS_CONVERTED, conversion.count)
            self._remember_spans(entry.url, conversion)
        self.state.put(entry)
        self._inc(STATS_WRITTEN)
        self._inc(STATS_BYTES, entry.size)
        self.record_change(entry.url, change, used)

    def _remember_spans(self, url: str, conversion: Conversion) -> None:
        old = self._spans.pop(url, None)
        if old is not None:
            self._span_count -= len(old[1]) // 3
        if conversion.packed_spans is not None:  # packed by the page worker
            crc, packed = conversion.packed_spans
            count = len(packed) // 3
        else:
            count = len(conversion.spans)
        if count and self._span_count + count <= SPAN_BUDGET:
            if conversion.packed_spans is None:
                crc, packed = zlib.crc32(conversion.data), pack_spans(conversion.spans)
            self._spans[url] = (crc, packed)
            self._span_count += count

    def _remembered_spans(self, entry: Entry, body: bytes) -> list[Span] | None:
        """The spans remembered for ``entry``'s file, if ``body`` is that file."""
        remembered = self._spans.pop(entry.url, None)
        if remembered is None:
            return None
        crc, packed = remembered
        self._span_count -= len(packed) // 3
        if zlib.crc32(body) != crc or not ascii_compatible(entry.encoding):
            return None
        return unpack_spans(body, packed, entry.encoding or "utf-8")

    def alias(self, url: str, target: str) -> None:
        """``url`` redirected to (canonical) ``target``: links to it lead there."""
        assert self.state is not None
        self.state.alias(canonical_url(url), target)

    def abandon(self, entry: Entry) -> None:
        """``entry``'s file could not be written: links must not lead there."""
        assert self.state is not None
        if entry.url in self._replacing:
            self.state.release(entry, self._replacing.pop(entry.url))

    def refused(self, url: str, error: Exception) -> None:
        self._inc(STATS_REFUSED)
        logger.warning("Mirror refused %s: %s", url, error)

    # -- the fix-up ----------------------------------------------------------------
    def fix_up_pages(self) -> int:
        """Fix the links of stored pages that depend on what was mirrored
        after them: absolute links to files mirrored since become relative,
        relative links kept as written whose file did not turn up where
        expected are pointed at it, or made absolute. Returns how many pages
        were rewritten."""
        state, tree = self.state, self.tree
        if state is None or tree is None or not self.convert:
            return 0
        fixed = 0
        #: file → the entry fixed up with it, for the other URLs of that file
        done: dict[Segments, Entry] = {}
        for entry in state:
            twin = done.get(entry.path)
            if twin is not None:
                # "/" and "/index.html": one file, fixed once; both must know
                # what its links stand for now (an update crawl reads it back)
                entry.pending, entry.kept = twin.pending, twin.kept
                entry.restore, entry.converted = twin.restore, twin.converted
                state.put(entry)
                continue
            if not needs_fix_up(entry, state):
                continue
            body = tree.read(entry.path)
            if body is None:
                continue
            fixed_page = fix_up(
                body,
                entry,
                state,
                encoding=entry.encoding,
                html=entry.kind == HTML,
                spans=self._remembered_spans(entry, body),
            )
            count = fixed_page.count
            if count:
                try:
                    tree.write(entry.path, fixed_page.data)
                except (OSError, UnsafePathError) as exc:
                    self.refused(entry.url, exc)
                    continue
                entry.converted = True
                fixed += 1
                self._inc(STATS_CONVERTED, count)
            entry.pending, entry.kept = sorted(fixed_page.pending), fixed_page.kept
            entry.restore = {**entry.restore, **fixed_page.restore}
            self._remember_spans(entry.url, fixed_page)
            state.put(entry)
            done[entry.path] = entry
        self._inc(STATS_FIXED, fixed)
        return fixed


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
