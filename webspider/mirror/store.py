"""The mirror: a folder of the site as fetched, browsable offline.

This extension is the crawl-wide service the mirror pipeline
(webspider.mirror.pipeline) and the update middleware
(webspider.mirror.update) share: it owns the folder
(webspider.mirror.safefs.SafeTree, which never writes outside it nor through
a symlink), the state of what was stored (webspider.mirror.state: records in
the crawl state, exported to ``<output>/mirror-state.jsonl`` when a crawl
ends) and ``<output>/changes.jsonl``. It converts links as each page is
written, fixes up at the end of the crawl the links to files that were
mirrored later, and reports URLs that are gone when a crawl finishes.

The mirror's records are committed with the crawl state's acknowledgements
(a page's records before its acknowledgement), so after a kill the state
knows every file of a page that will not be fetched again. The end-of-crawl
work runs on ``crawl_state_closing``, while the state is open, committing as
it goes; a kill during it leaves the crawl unfinished, and the same command
finishes it. Without a crawl state (another SCHEDULER) the records are kept
in memory and the work runs on ``spider_closed``.

``changes.jsonl`` is crash-safe as ``pages.jsonl`` is: its length is
committed with the records its lines describe (a record of namespace
``mirror.outputs`` keyed by the file's absolute path, as each worker of a
shared state writes its own, written on ``crawl_state_committing`` after the
file is flushed and fsynced), and a resumed crawl cuts it back to that
length, so the lines of pages that will be fetched again (their records were
not committed) are not there twice.

Settings: ``WEBSPIDER_MIRROR`` (folder, ``0`` = off), ``WEBSPIDER_MIRROR_*``;
see docs/mirror.md. Stats: ``webspider/mirror/*``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from scrapy import signals
from scrapy.exceptions import NotConfigured

from webspider.config import get_output_dir
from webspider.keys import (
    CHANGES_FILE,
    MIRROR_STATE_FILE,
    PAGES_FILE,
    STATS_STATE_RESUMED,
)
from webspider.mirror.entry import Entry
from webspider.mirror.fixup import (
    FIX_UP_COMMIT,
    FileFixer,
    FixedUp,
    FixUp,
    keeps_spans,
    packed_spans,
)
from webspider.mirror.links import Conversion, convert, unconvert
from webspider.mirror.options import MirrorOptions
from webspider.mirror.paths import conflict_name, original_path, url_path
from webspider.mirror.pending import split_kept
from webspider.mirror.safefs import SafeTree, Segments, UnsafePathError
from webspider.mirror.state import MirrorState
from webspider.mirror.targets import TargetIndex
from webspider.page.response import CSS_TYPES, is_html, media_type, parsed_page
from webspider.records import MemoryRecordStore
from webspider.signals import (
    crawl_state_closing,
    crawl_state_committing,
    crawl_state_finishing,
    crawl_state_opened,
)
from webspider.storage import crawl_stop, stop_crawl
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable
    from concurrent.futures import Future

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.statscollectors import StatsCollector
    from typing_extensions import Self

    from webspider.page.links import ParsedPage
    from webspider.records import Records, RecordStore

logger = logging.getLogger(__name__)


NEW, CHANGED, UNCHANGED, GONE = "new", "changed", "unchanged", "gone"
#: unchanged, and reported already by this run (a later round fetched it
#: again, or a resumed crawl): no line in changes.jsonl
SAME = "same"

STATS_WRITTEN = "webspider/mirror/written_count"
STATS_BYTES = "webspider/mirror/written_bytes_count"
STATS_NOT_MODIFIED = "webspider/mirror/not_modified_count"
STATS_CONVERTED = "webspider/mirror/converted_links_count"
STATS_FIXED = "webspider/mirror/fixed_up_count"
STATS_REFUSED = "webspider/mirror/refused_count"
#: a client error asked again after a Retry-After pause
#: (webspider.politeness), whatever RETRY_HTTP_CODES says
_PAUSED = 429
STATS_CHANGES = "webspider/mirror/change_count"  # /<new|changed|unchanged|gone>
_CHANGE_KEYS = {
    change: f"{STATS_CHANGES}/{change}" for change in (NEW, CHANGED, UNCHANGED, GONE)
}

#: how far the outputs the mirror writes got, committed with its records
NS_OUTPUTS = "mirror.outputs"


HTML, CSS = "html", "css"

#: a string as ``json.dumps(value, ensure_ascii=False)`` writes it
_encode_text = json.encoder.encode_basestring


def change_line(url: str, change: str, path: Segments | None) -> str:
    """changes.jsonl's line: ``json.dumps({"url": url, "change": change,
    "path": "/".join(path) or None}, ensure_ascii=False)`` and a newline,
    the same text without the dict and the encoder's walk (a line a page)."""
    where = _encode_text("/".join(path)) if path else "null"
    text = _encode_text
    return f'{{"url": {text(url)}, "change": {text(change)}, "path": {where}}}\n'


#: a page stored by a PageWriter: the path written, the conversion, and
#: the page's index record when the writer made it
Stored = tuple[Segments, "Conversion | None", "list[Any] | None"]


class PageWriter(Protocol):
    """Another writer of the mirror's pages: one that read a page may hold
    it and write it itself, so its bytes need not cross again (the page
    worker, webspider.pageworker, attaches itself as one). It converts links
    with the snapshot of the mirror's state each store hands it, so it keeps
    nothing per page."""

    def start_mirror(self, root: str, forbidden: list[Segments]) -> bool:
        """Write the mirror at ``root`` from now on; whether it will."""

    def holds(self, response: Response) -> bool:
        """Whether it holds ``response``'s page, and can store it."""

    def url_path(self, response: Response) -> Segments | None:
        """``url_path`` of ``response``'s URL (an HTML page's or a
        stylesheet's) if it worked it out already, else None."""

    def plain_path(self, response: Response) -> str | None:
        """``"/".join(url_path(canonical_url(response.url)))`` (the path a
        ``where_value`` of 1 stands for) if it worked it out already,
        else None."""

    def planned_path(self, response: Response) -> Segments | None:
        """``SafeTree.plan`` of ``url_path(response)`` in its own tree of
        the mirror, if it planned it already, else None."""

    def forget_plans(self) -> None:
        """A write of the crawl's found the tree changed: plan anew."""

    async def store(
        self,
        response: Response,
        entry: Entry,
        targets: TargetIndex | None,
    ) -> Stored | None:
        """Convert (with ``targets``, when given) and write the page it holds
        for ``response`` at ``entry.path``: the path written, the
        conversion, and the page's index record (``Entry.index_json`` of
        ``entry`` as written, or None: made here), or None (store it here).
        Raises UnsafePathError or OSError when the write was refused."""

    def forget(self, response: Response) -> None:
        """``response``'s page need not be kept any longer."""

    async def fix_files(
        self, jobs: list[dict[str, Any]], targets: dict[str, Any]
    ) -> list[dict[str, Any]] | None:
        """Fix up the files of ``jobs`` (webspider.mirror.fixup.FileFixer)
        at the end of the crawl; None: the fix-up does them itself."""

    def mirror_done(self) -> None:
        """The crawl ends and its fix-up is over: the mirror asks nothing
        more of it."""


def kind_of(response: Response) -> str:
    """ "html" or "css" for what has links to convert, "" otherwise."""
    if is_html(response):
        return HTML
    return CSS if media_type(response) in CSS_TYPES else ""


def link_keys(page: ParsedPage | None, url: str) -> list[str]:
    """The canonical URLs a page links to (and its own), the ones its
    conversion looks up."""
    if page is None:
        return [url]
    keys = [url, *page.link_keys()]
    # each joined value is a link's URL (with a fragment): only one that is
    # not would be canonicalised here
    links = {link.url for link in page.links} if page.resolved else ()
    for absolute in page.resolved.values():
        if absolute:
            address = absolute.partition("#")[0]
            if address not in links:
                keys.append(canonical_url(address))
    return keys


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
        #: client errors the crawl may ask again for (RETRY_HTTP_CODES, a
        #: Retry-After): not taken as a URL's last answer
        self._retried = frozenset(
            [_PAUSED, *map(int, settings.getlist("RETRY_HTTP_CODES"))]
        )
        self.update = options.update
        self.thread_size = options.thread_size
        self.state_path = output / MIRROR_STATE_FILE
        self.changes_path = output / CHANGES_FILE
        #: its record in NS_OUTPUTS: the file's absolute path, as the
        #: workers of a shared state each write their own
        self._changes_key = str(self.changes_path.resolve())
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
        #: a shared crawl's other workers' mirrors on this machine (read only)
        self.siblings: list[SafeTree] = []
        self.output = output
        self.state: MirrorState | None = None
        #: the crawl state's records (crawl_state_opened), else memory
        self.records: RecordStore | None = None
        self._changes: IO[bytes] | None = None
        #: the thread changes.jsonl's fsyncs run in (state_committing)
        self._fsync: ThreadPoolExecutor | None = None
        #: this crawl's run number (kept when an interrupted crawl goes on)
        self.run = 0
        self._finished = False
        #: URL → the entry it had, while its new file is being written
        self._replacing: dict[str, Entry | None] = {}
        #: URL → where it was reserved (path, its ``where_value``)
        self._placed: dict[str, tuple[Segments, str | int]] = {}
        #: the crawler's stats collector, once read (``_inc``)
        self._stats: StatsCollector | None = None
        #: another writer of pages it read (see attach and store_in_worker)
        self.writer: PageWriter | None = None
        self._attached: PageWriter | None = None
        connect = crawler.signals.connect
        connect(self.state_opened, signal=crawl_state_opened)
        connect(self.state_finishing, signal=crawl_state_finishing)
        connect(self.state_closing, signal=crawl_state_closing)
        connect(self.state_committing, signal=crawl_state_committing)
        connect(self.spider_opened, signal=signals.spider_opened)
        connect(self.spider_closed, signal=signals.spider_closed)
        if self.convert:
            connect(self.response_received, signal=signals.response_received)

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

    def state_opened(self, records: RecordStore) -> None:
        self.records = records

    def spider_opened(self) -> None:
        self.tree = SafeTree(self.root, self._forbidden())
        records = self.records if self.records is not None else MemoryRecordStore()
        # a shared crawl's records name the folder of whichever worker began
        # or ended last: not "another mirror" (that would empty them all)
        shared = bool(getattr(records, "shared", False))
        self.state = state = MirrorState(records, str(self.root.resolve()), shared)
        export = self.state_path
        if shared:
            others = sibling_outputs(self.output)
            self.siblings = self._sibling_trees(others)
            export = last_export(
                [self.state_path, *(o / MIRROR_STATE_FILE for o in others)]
            )
        # A crawl that was interrupted goes on where it stopped (the scheduler
        # opened its crawl state, before this): the URLs it fetched before
        # count as seen by this crawl.
        stats = self.crawler.stats
        continued = bool(stats is not None and stats.get_value(STATS_STATE_RESUMED))
        self.run, resumed = state.begin(export, continued)
        if resumed:
            # a kill between a file's temporary write and its rename left
            # the temporary name in the mirror; the write is done again
            self.tree.remove_temporaries()
        self.changes_path.parent.mkdir(parents=True, exist_ok=True)
        self._changes = self._open_changes(resumed, records.records(NS_OUTPUTS), shared)
        self._start_writer()

    def _sibling_trees(self, others: list[Path]) -> list[SafeTree]:
        """The mirrors of the other workers writing into the same output
        folder (``others``), when the mirror is in the worker's folder."""
        try:
            inside = self.root.resolve().relative_to(self.output.resolve())
        except ValueError:
            return []
        return [SafeTree(o / inside) for o in others if (o / inside).is_dir()]

    def _open_changes(
        self, resumed: bool, outputs: Records, shared: bool = False
    ) -> IO[bytes]:
        """changes.jsonl, cut back to its committed length when resumed."""
        path = self.changes_path
        committed = outputs.get(self._changes_key) if resumed else 0
        if committed is None and shared:
            # a worker joining a shared crawl's run it wrote nothing for yet:
            # its file holds an earlier run's changes, as pages.jsonl does
            committed = 0
        if committed is None or not path.exists():  # from before the record
            return path.open("ab")
        fh = path.open("r+b")
        fh.truncate(min(int(committed), fh.seek(0, os.SEEK_END)))
        fh.seek(0, os.SEEK_END)
        outputs.put(self._changes_key, fh.tell())
        return fh

    def state_committing(self, records: RecordStore) -> None:
        """Write what the mirror's state buffers, and commit changes.jsonl's
        length with the records its lines describe."""
        fh = self._changes
        syncing: Future[None] | None = None
        if fh is not None:
            try:
                fh.flush()
            except OSError as exc:
                raise self._named(exc, self.changes_path) from None
            # the fsync waits for the disk (1-10 ms, without the GIL) in a
            # thread while the state's buffers are written here, as
            # pages.jsonl's (webspider.frontier.pages)
            if self._fsync is None:
                self._fsync = ThreadPoolExecutor(
                    1, thread_name_prefix="webspider-mirror"
                )
            syncing = self._fsync.submit(os.fsync, fh.fileno())
        try:
            if self.state is not None:
                self.state.flush()
        finally:
            if syncing is not None:
                try:
                    syncing.result()
                except OSError as exc:
                    raise self._named(exc, self.changes_path) from None
        if fh is not None:
            records.records(NS_OUTPUTS).put(self._changes_key, fh.tell())

    @staticmethod
    def _named(exc: OSError, path: Path) -> OSError:
        """``exc`` naming ``path`` (a write's error names no file): the line
        that stops the crawl says which (webspider.storage)."""
        if exc.filename is None:
            exc.filename = str(path)
        return exc

    def _start_writer(self) -> None:
        writer, state = self._attached, self.state
        if writer is None or state is None or self.writer is not None:
            return
        if writer.start_mirror(str(self.root), self._forbidden()):
            self.writer = writer

    async def state_finishing(
        self,
        reason: str,
        records: RecordStore,
        commit: Callable[[], None] | None = None,
    ) -> None:
        """The crawl ends, on the event loop: the fix-up shares its files'
        work with the page worker when it writes the mirror (its core is
        idle by now), and the rest of ``finish`` follows."""
        state, writer = self.state, self.writer
        if state is None or self._finished or writer is None or reason == "shutdown":
            return  # finished on crawl_state_closing
        self._finished = True
        try:
            state.flush()
            started = time.monotonic()
            fixed = await self.fix_up_pages_shared(writer, commit)
            # before the mirror's index is written and the state closes (this
            # process's last work, some 0.05 s on python3.11-doc): the page
            # worker stops meanwhile, on its own core
            writer.mirror_done()
            self._finish(reason, commit, fixed, started)
        except Exception as exc:
            # an async receiver's error would be logged with its traceback
            if not stop_crawl(self.crawler, exc):
                raise

    def state_closing(
        self,
        reason: str,
        records: RecordStore,
        commit: Callable[[], None] | None = None,
    ) -> None:
        """The crawl state closes: finish what the mirror keeps in it (done
        already when the crawl's end was sent on the event loop)."""
        self.finish(reason, commit)

    def spider_closed(self, reason: str) -> None:
        self.finish(reason, None)  # done already when the crawl state closed
        for tree in (self.tree, *self.siblings):
            if tree is not None:
                tree.close()

    def finish(self, reason: str, commit: Callable[[], None] | None) -> None:
        """The end of the crawl: the fix-up, what is gone, the export.

        A crawl paused by Ctrl-C (``shutdown``) is not over: the same command
        goes on with it, and the run that finishes it fixes the links up.
        Fixed up now, a link to a file not mirrored yet would become
        absolute, and then relative again (as the path the fix-up computes,
        not as the page wrote it) once its file is written: the mirror of a
        paused and resumed crawl would differ from an uninterrupted one's.
        Meanwhile such links lead where their files are expected."""
        state = self.state
        if state is None or self._finished:
            return
        self._finished = True
        if crawl_stop(self.crawler) is not None:
            # a write the disk refused stopped the crawl: its end is the
            # resumed crawl's (the crawl state closed without a commit)
            self._close_changes()
            return
        state.flush()
        started = time.monotonic()
        fixed = 0 if reason == "shutdown" else self.fix_up_pages(commit)
        self._finish(reason, commit, fixed, started)

    def _finish(
        self,
        reason: str,
        commit: Callable[[], None] | None,
        fixed: int,
        started: float,
    ) -> None:
        """``finish`` after the fix-up (``fixed`` pages since ``started``)."""
        state = self.state
        assert state is not None
        if crawl_stop(self.crawler) is not None:
            self._close_changes()
            return
        if fixed:
            logger.info(
                "Mirror: links fixed up in %d pages in %.2f s",
                fixed,
                time.monotonic() - started,
            )
        finished = reason == "finished"
        if finished:
            for gone, entry in enumerate(state.unseen(self.run), 1):
                entry.gone = True
                state.update(entry)
                self.record_change(entry.url, GONE, entry.path)
                if commit is not None and gone % FIX_UP_COMMIT == 0:
                    commit()
        state.end(finished)
        try:
            state.export(self.state_path)
        except OSError as exc:
            if not stop_crawl(self.crawler, exc, self.state_path):
                logger.error("Mirror: could not write %s: %s", self.state_path, exc)
        if commit is not None:
            commit()
        self._close_changes()

    def _close_changes(self) -> None:
        if self._fsync is not None:
            self._fsync.shutdown()
            self._fsync = None
        fh, self._changes = self._changes, None
        if fh is None:
            return
        try:
            fh.close()
        except OSError as exc:
            if not stop_crawl(self.crawler, exc, self.changes_path):
                raise

    def unchanged(self, entry: Entry) -> None:
        """``entry`` was found unchanged (a 304) by this crawl."""
        again = entry.run == self.run and not entry.gone
        self.seen(entry, revalidated=True)
        self.record_change(entry.url, UNCHANGED, entry.path, again=again)

    def seen(self, entry: Entry, revalidated: bool = False) -> None:
        """``entry`` was fetched by this crawl (so it is not gone);
        ``revalidated``: found unchanged by a 304."""
        assert self.state is not None
        if entry.run != self.run or entry.gone or entry.revalidated != revalidated:
            entry.run, entry.gone = self.run, False
            entry.revalidated = revalidated
            self.state.update(entry)

    def fetched_by_this_run(self, entry: Entry) -> bool:
        """Whether this crawl stored ``entry`` from a response of its own (not
        a 304): asking for it again is a refetch of this crawl (a later
        round, or a page not acknowledged before a kill), not an update, so
        it goes out without validators, as in the crawl that stored it."""
        return entry.run == self.run and not entry.gone and not entry.revalidated

    def _inc(self, key: str, count: int = 1) -> None:
        # the collector read once (Crawler.stats is a descriptor that checks
        # it is set: ~0.4 µs a read, four times a page)
        stats = self._stats
        if stats is None:
            stats = self._stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(key, count)

    def record_change(
        self, url: str, change: str, path: Segments | None, again: bool = False
    ) -> None:
        """One line in changes.jsonl per URL and crawl: a URL fetched again
        (``again``: a later round, or a resumed crawl) and found the same is
        not reported twice."""
        if change == SAME or (again and change == UNCHANGED):
            return
        if self._changes is not None:
            line = change_line(url, change, path)
            try:
                self._changes.write(line.encode("utf-8"))
            except OSError as exc:
                raise self._named(exc, self.changes_path) from None
        self._inc(_CHANGE_KEYS.get(change) or f"{STATS_CHANGES}/{change}")

    # -- update crawls -----------------------------------------------------------
    def stored(self, url: str) -> Entry | None:
        """The stored copy of ``url`` if its file is still there."""
        if self.state is None or self.tree is None:
            return None
        entry = self.state.entry(canonical_url(url))
        if entry is None or self._holder(entry) is None:
            return None
        return entry

    def _holder(self, entry: Entry) -> SafeTree | None:
        """The mirror holding ``entry``'s file: this worker's, or (a shared
        crawl's update) the mirror of the worker on this machine that wrote
        it, which is kept there (``scrapy combine`` takes the union)."""
        for tree in (self.tree, *self.siblings):
            if tree is not None and tree.exists(entry.path):
                return tree
        return None

    def stored_body(self, entry: Entry, url: str) -> bytes:
        """The stored bytes of ``entry`` as the site sent them, near enough
        to extract the same links: converted links are turned back into the
        absolute URLs they stand for. Empty for what has no links."""
        assert self.tree is not None and self.state is not None
        if not entry.kind:
            return b""  # nothing with links: the spider needs no body
        tree = self._holder(entry) or self.tree
        body = tree.read(entry.path) or b""
        if not entry.converted:
            return body
        original = tree.read(original_path(entry.path))
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
            self.state.update(entry)
        self._inc(STATS_NOT_MODIFIED)

    # -- storing -----------------------------------------------------------------
    def claim(self, url: str, path: Segments, owner: str | None = "") -> Segments:
        """``path`` unless another URL owns that name (or one differing only
        in case), then a name with a hash of the URL. ``owner``: the owner of
        ``path`` as planned already (``""``: not known)."""
        assert self.state is not None and self.tree is not None
        for _ in range(4):
            if owner == "":
                path = self.tree.plan(path)
                owner = self.state.owner(path)
            if owner is None or owner == url:
                return path
            owner = ""
            tag = hashlib.sha256(url.encode()).hexdigest()[:8]
            path = (*path[:-1], conflict_name(path[-1], tag))
        raise UnsafePathError(f"no free name for {url}")

    def prepare(self, response: Response, digest: str) -> tuple[Entry, str, bool]:
        """What to store for ``response``: its entry, the change, and whether
        a file is to be written (not when the stored file has these bytes)."""
        assert self.state is not None and self.tree is not None
        url = canonical_url(response.url)
        kind = kind_of(response)
        old = self.state.entry(url)
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
                self.state.update(old)
            # fetched by this run already: a later round, or again after a
            # kill (its change is reported)
            again = old.run == self.run and not old.gone
            self.seen(old)
            return old, SAME if again else UNCHANGED, False
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
        owned = False
        if path is None:
            planned = self.plan(response, kind)
            if old is None:
                # a new URL takes the name when nobody owns it (nearly
                # always): one write, not a read of its owner and then it
                owner = self.state.take(url, planned)
                owned = owner is None
            else:
                owner = self.state.owner(planned)
            twin = self.twin(url, planned, digest, owner)
            if twin is not None:
                # "/" and "/index.html": the same bytes want the same name;
                # one file serves both (links to either already open it)
                entry.path, entry.converted = twin.path, twin.converted
                entry.restore, entry.restore_joins = twin.restore, twin.restore_joins
                self.state.put(entry)
                self.state.add_twin(twin.url, url)
                return entry, change, False
            path = self.claim(url, planned, owner)
        entry.path = path
        # known before converting (the page may link to itself), recorded
        # only once written (``written``), forgotten if not (``abandon``)
        self._replacing[url] = old
        writer = self.writer
        plain = writer.plain_path(response) if writer is not None and kind else None
        owned = owned and path == planned
        self._placed[url] = (path, self.state.reserve(entry, plain, owned))
        return entry, change, True

    def plan(self, response: Response, kind: str) -> Segments:
        """``SafeTree.plan`` of the page's ``url_path``: the page worker's
        plan when it made one as it read the page (a look-up in the folder
        it creates the files in, off this core and never waiting there for
        the folder's lock), or planned here."""
        assert self.tree is not None
        writer = self.writer
        if writer is not None and kind:
            planned = writer.planned_path(response)
            if planned is not None:
                return planned
        return self.tree.plan(self.url_path(response, kind))

    def _forget_plans(self) -> None:
        """A write went to another path than planned, or was refused: the
        tree changed, and both trees' plans walk it again."""
        if self.tree is not None:
            self.tree.forget_plans()
        if self.writer is not None:
            self.writer.forget_plans()

    def url_path(self, response: Response, kind: str) -> Segments:
        """The mirror path of ``response``'s URL: the page worker's, when it
        read the page and worked it out (off this core), or worked out
        here."""
        writer = self.writer
        if writer is not None and kind:
            path = writer.url_path(response)
            if path is not None:
                return path
        return url_path(response.url, kind == HTML)

    def twin(
        self, url: str, path: Segments, digest: str, owner: str | None = ""
    ) -> Entry | None:
        """Another URL already stored at ``path`` (whose ``owner`` is known
        when not ``""``) with the same bytes."""
        assert self.state is not None and self.tree is not None
        if owner == "":
            owner = self.state.owner(path)
        twin = self.state.entry(owner) if owner and owner != url else None
        if twin is None or twin.hash != digest or not self.tree.exists(path):
            return None
        return twin

    def needs_conversion(self, entry: Entry) -> bool:
        return self.convert and entry.kind != ""

    def targets(self, response: Response, entry: Entry) -> TargetIndex | None:
        """Where the files of the page's links are, for its conversion (None:
        it is not converted). Read on the reactor thread, in a few batched
        reads, so the conversion itself may run anywhere."""
        if not self.needs_conversion(entry):
            return None
        assert self.state is not None
        page = parsed_page(response, self.crawler.spider)
        return self.state.targets(link_keys(page, entry.url))

    def store_file(
        self, response: Response, entry: Entry, targets: TargetIndex | None
    ) -> tuple[Segments, Conversion | None]:
        """Convert (with ``targets``, when given) and write the file of
        ``entry``. Touches no shared state, so it may run in a thread;
        ``written`` records it."""
        assert self.tree is not None
        body = response.body
        conversion = (
            self.render(response, entry, targets) if targets is not None else None
        )
        if conversion is None or conversion.data == body:
            return self.tree.write(entry.path, body), conversion
        used = self.tree.write(entry.path, conversion.data)
        if self.keep_originals:
            self.tree.write(original_path(used), body)
        return used, conversion

    async def store_in_worker(
        self, response: Response, entry: Entry, targets: TargetIndex | None
    ) -> Stored | None:
        """``store_file`` by the attached writer, when it holds the page (it
        read it): the page's bytes and scan need not cross again. None:
        store it here."""
        writer = self.writer
        if writer is None or not writer.holds(response):
            return None
        return await writer.store(response, entry, targets)

    def forget(self, response: Response) -> None:
        """The attached writer need not keep ``response``'s page any longer."""
        if self.writer is not None:
            self.writer.forget(response)

    def render(
        self, response: Response, entry: Entry, targets: TargetIndex
    ) -> Conversion:
        """The converted bytes of a page or stylesheet."""
        html = entry.kind == HTML
        page = parsed_page(response, self.crawler.spider) if html else None
        return convert(
            response.body,
            targets,
            entry.path,
            page_url=response.url,
            base_url=page.base_url if page is not None else response.url,
            encoding=getattr(response, "encoding", None),
            html=html,
            page=page,
        )

    def written(
        self,
        entry: Entry,
        used: Segments,
        change: str,
        conversion: Conversion | None,
        record: list[Any] | None = None,
    ) -> None:
        """Record a file ``store_file`` wrote (on the reactor thread);
        ``record``: its index record, when the page worker made it."""
        assert self.state is not None
        old = self._replacing.pop(entry.url, None)
        if used != entry.path:
            # the tree changed under us: the folders planned are walked again
            self._forget_plans()
        entry.path = used
        reserved = self._placed.pop(entry.url, None)
        placed = reserved[1] if reserved is not None and reserved[0] == used else None
        spans: tuple[int, array[int]] | None = None
        plain: list[str] | None = None
        if conversion is not None:
            entry.converted = conversion.count > 0
            entry.pending = sorted(conversion.pending)
            plain = conversion.plain
            if plain is None:
                plain, entry.kept = split_kept(entry.url, conversion.kept)
            elif plain and conversion.kept:
                skip = set(plain)
                entry.kept = {k: v for k, v in conversion.kept.items() if k not in skip}
            else:
                entry.kept = conversion.kept
            entry.restore = conversion.restore
            self._inc(STATS_CONVERTED, conversion.count)
            # the spans are kept with a page's own record (the links kept by
            # target are forgotten when it is written, most of them), and
            # with a large page's (its rescan would cost more)
            if keeps_spans(entry.size, bool(entry.pending or entry.kept), bool(plain)):
                spans = packed_spans(conversion)
        packed = conversion.packed_restore if conversion is not None else None
        self.state.put(
            entry,
            spans,
            plain,
            placed,
            fresh=old is None,
            packed_restore=packed,
            record=record,
        )
        self._inc(STATS_WRITTEN)
        self._inc(STATS_BYTES, entry.size)
        # written again after a kill, by the run that wrote it: reported then
        again = old is not None and old.run == self.run and old.hash == entry.hash
        self.record_change(entry.url, change, used, again=again)

    def response_received(self, response: Response, request: Request) -> None:
        """A client error the crawl does not ask again for (a 404, unless
        RETRY_HTTP_CODES names it) is its URL's last answer in this run,
        and nothing the mirror writes: links to it found from now on are
        converted as the fix-up would leave them (MirrorState.mark_absent).
        Error pages do not reach the pipeline unless HTTPERROR_ALLOWED_CODES
        lets them."""
        status = response.status
        if (
            400 <= status < 500
            and status not in self._retried
            and request.method == "GET"
            and self.state is not None
        ):
            self.state.mark_absent(canonical_url(response.url))

    def alias(self, url: str, target: str) -> None:
        """``url`` redirected to (canonical) ``target``: links to it lead there."""
        assert self.state is not None
        self.state.alias(canonical_url(url), target)

    def abandon(self, entry: Entry) -> None:
        """``entry``'s file could not be written: links must not lead there."""
        assert self.state is not None
        self._forget_plans()  # refused: the tree may have changed
        self._placed.pop(entry.url, None)
        if entry.url in self._replacing:
            self.state.release(entry, self._replacing.pop(entry.url))

    def refused(self, url: str, error: Exception) -> None:
        """``url``'s file could not be written: the page's fault (a path
        the folder refuses), or the disk's (full, failing: the crawl stops,
        webspider.storage)."""
        if stop_crawl(self.crawler, error):
            return
        self._inc(STATS_REFUSED)
        logger.warning("Mirror refused %s: %s", url, error)

    # -- the fix-up ----------------------------------------------------------------
    def fix_up_pages(self, commit: Callable[[], None] | None = None) -> int:
        """Fix the links of stored pages that depend on what was mirrored
        after them (webspider.mirror.fixup), committing (``commit``) as it
        goes. Returns how many pages were rewritten."""
        fix_up = self._fix_up(commit)
        return 0 if fix_up is None else self._fixed_up(fix_up.run(commit))

    async def fix_up_pages_shared(
        self, fixer: FileFixer, commit: Callable[[], None] | None = None
    ) -> int:
        """``fix_up_pages``, the files read, rewritten and written by this
        process and by ``fixer`` (the page worker) together."""
        fix_up = self._fix_up(commit)
        if fix_up is None:
            return 0
        return self._fixed_up(await fix_up.run_shared(fixer, commit))

    def _fix_up(self, commit: Callable[[], None] | None) -> FixUp | None:
        """The fix-up of the pages waiting for one, or None (none waits, or
        no mirror converts links)."""
        state, tree = self.state, self.tree
        if state is None or tree is None or not self.convert:
            return None
        state.gather(commit)
        waiting = state.pending.count()
        if not waiting:
            return None
        logger.info("Mirror: fixing up the links of up to %d pages", waiting)
        return FixUp(state, tree, self.refused)

    def _fixed_up(self, done: FixedUp) -> int:
        self._inc(STATS_CONVERTED, done.links)
        self._inc(STATS_FIXED, done.pages)
        return done.pages


def sibling_outputs(folder: Path) -> list[Path]:
    """The other workers' folders beside ``folder`` when it is a shared
    crawl's worker folder (``<output>/worker-<n>``, held through
    ``worker-<n>.lock``: webspider.frontier.workers), else none."""
    folder = folder.resolve()
    parent = folder.parent
    if not (parent / f"{folder.name}.lock").is_file():
        return []
    return sorted(
        p
        for p in parent.glob("worker-*")
        if p != folder and p.name[len("worker-") :].isdigit() and p.is_dir()
    )


def last_export(paths: list[Path]) -> Path:
    """Of the exports ``paths`` (the first when none exists), the one of the
    latest run, a finished crawl's first, then the newest: every worker of
    a shared crawl exports the shared index when it stops, so the one that
    stopped last holds what the others wrote (webspider.reports.combine
    picks the same way)."""

    def rank(path: Path) -> tuple[int, bool, int]:
        try:
            with path.open("rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - 256))
                last = json.loads(fh.read().splitlines()[-1])
                return (
                    int(last["run"]),
                    bool(last["finished"]),
                    os.fstat(fh.fileno()).st_mtime_ns,
                )
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return -1, False, 0

    found = [p for p in paths if p.is_file()]
    return max(found, key=rank) if found else paths[0]


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
