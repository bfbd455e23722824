"""The mirror: a folder of the site as fetched, browsable offline.

This extension is the crawl-wide service the mirror pipeline
(webspider.mirror.pipeline) and the update middleware
(webspider.mirror.update) share: it owns the folder
(webspider.mirror.safefs.SafeTree, which never writes outside it nor through
a symlink), the state of what was stored (webspider.mirror.state: records in
the crawl state, exported to ``<output>/mirror-state.jsonl`` when a crawl
ends) and ``<output>/changes.jsonl`` (webspider.mirror.changes). It decides
where each page goes, converts its links as it is written (here, or by the
page worker: webspider.mirror.writer), and records what it wrote; at the
end of the crawl (webspider.mirror.finish) it fixes up the links to files
that were mirrored later, and reports URLs that are gone when a crawl
finishes.

The mirror's records are committed with the crawl state's acknowledgements
(a page's records before its acknowledgement), so after a kill the state
knows every file of a page that will not be fetched again. The end-of-crawl
work runs on ``crawl_state_closing``, while the state is open, committing as
it goes; a kill during it leaves the crawl unfinished, and the same command
finishes it. Without a crawl state (another SCHEDULER) the records are kept
in memory and the work runs on ``spider_closed``.

Settings: ``WEBSPIDER_MIRROR`` (folder, ``0`` = off), ``WEBSPIDER_MIRROR_*``;
see docs/mirror.md. Stats: ``webspider/mirror/*`` (webspider.mirror.stats,
webspider.mirror.changes).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from webspider.config import get_output_dir
from webspider.keys import (
    CHANGES_FILE,
    MIRROR_STATE_FILE,
    PAGES_FILE,
    STATS_STATE_RESUMED,
)
from webspider.mirror.changes import (
    CHANGE_KEYS,
    CHANGED,
    NEW,
    NS_OUTPUTS,
    SAME,
    STATS_CHANGES,
    UNCHANGED,
    ChangesFile,
    change_line,
    named,
)
from webspider.mirror.entry import Entry
from webspider.mirror.finish import end, end_shared, fix_up, fix_up_shared
from webspider.mirror.fixup import keeps_spans, packed_spans
from webspider.mirror.links import Conversion, convert
from webspider.mirror.options import MirrorOptions
from webspider.mirror.paths import conflict_name, original_path, url_path
from webspider.mirror.pending import split_kept
from webspider.mirror.safefs import SafeTree, Segments, UnsafePathError
from webspider.mirror.siblings import last_export, sibling_outputs, sibling_trees
from webspider.mirror.state import MirrorState
from webspider.mirror.stats import (
    STATS_BYTES,
    STATS_CONVERTED,
    STATS_REFUSED,
    STATS_WRITTEN,
)
from webspider.mirror.targets import TargetIndex
from webspider.mirror.writer import PageWriter, Stored
from webspider.page.response import CSS_TYPES, is_html, media_type, parsed_page
from webspider.records import MemoryRecordStore
from webspider.signals import (
    crawl_state_closing,
    crawl_state_committing,
    crawl_state_finishing,
    crawl_state_opened,
)
from webspider.storage import stop_crawl
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.statscollectors import StatsCollector
    from typing_extensions import Self

    from webspider.mirror.fixup import FileFixer
    from webspider.page.links import ParsedPage
    from webspider.records import RecordStore

logger = logging.getLogger(__name__)

#: a client error asked again after a Retry-After pause
#: (webspider.politeness), whatever RETRY_HTTP_CODES says
_PAUSED = 429

HTML, CSS = "html", "css"


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
        self.changes = ChangesFile(self.changes_path)
        #: this crawl's run number (kept when an interrupted crawl goes on)
        self.run = 0
        #: the end of the mirror is done or under way (webspider.mirror.finish)
        self.ended = False
        #: URL → the entry it had, while its new file is being written
        self._replacing: dict[str, Entry | None] = {}
        #: URL → where it was reserved (path, its ``where_value``)
        self._placed: dict[str, tuple[Segments, str | int]] = {}
        #: the crawler's stats collector, once read (``inc``)
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
            self.siblings = sibling_trees(self.root, self.output, others)
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
        self.changes.open(resumed, records.records(NS_OUTPUTS), shared)
        self._start_writer()

    def state_committing(self, records: RecordStore) -> None:
        """Write what the mirror's state buffers, and commit changes.jsonl's
        length with the records its lines describe (fsynced meanwhile)."""
        state = self.state
        self.changes.commit(records, state.flush if state is not None else None)

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
        """The crawl ends, on the event loop: the end of the mirror, its
        fix-up shared with the page worker when it writes the mirror
        (webspider.mirror.finish.end_shared)."""
        await end_shared(self, reason, commit)

    def state_closing(
        self,
        reason: str,
        records: RecordStore,
        commit: Callable[[], None] | None = None,
    ) -> None:
        """The crawl state closes: finish what the mirror keeps in it (done
        already when the crawl's end was sent on the event loop)."""
        end(self, reason, commit)

    def spider_closed(self, reason: str) -> None:
        end(self, reason, None)  # done already when the crawl state closed
        for tree in (self.tree, *self.siblings):
            if tree is not None:
                tree.close()

    def fix_up_pages(self, commit: Callable[[], None] | None = None) -> int:
        """Fix the links of stored pages that depend on what was mirrored
        after them (webspider.mirror.finish.fix_up); how many were
        rewritten."""
        return fix_up(self, commit)

    async def fix_up_pages_shared(
        self, fixer: FileFixer, commit: Callable[[], None] | None = None
    ) -> int:
        """``fix_up_pages``, with ``fixer`` (the page worker)."""
        return await fix_up_shared(self, fixer, commit)

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

    def inc(self, key: str, count: int = 1) -> None:
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
        fh = self.changes.fh
        if fh is not None:
            line = change_line(url, change, path)
            try:
                fh.write(line.encode("utf-8"))
            except OSError as exc:
                raise named(exc, self.changes_path) from None
        self.inc(CHANGE_KEYS.get(change) or f"{STATS_CHANGES}/{change}")

    # -- update crawls (a 304 becomes the stored page: webspider.mirror.update) --
    def stored(self, url: str) -> Entry | None:
        """The stored copy of ``url`` if its file is still there."""
        if self.state is None or self.tree is None:
            return None
        entry = self.state.entry(canonical_url(url))
        if entry is None or self.holder(entry) is None:
            return None
        return entry

    def holder(self, entry: Entry) -> SafeTree | None:
        """The mirror holding ``entry``'s file: this worker's, or (a shared
        crawl's update) the mirror of the worker on this machine that wrote
        it, which is kept there (``scrapy combine`` takes the union)."""
        for tree in (self.tree, *self.siblings):
            if tree is not None and tree.exists(entry.path):
                return tree
        return None

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
            "content_type": header(response, b"Content-Type"),
            "etag": header(response, b"ETag"),
            "last_modified": header(response, b"Last-Modified"),
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
            self.inc(STATS_CONVERTED, conversion.count)
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
        self.inc(STATS_WRITTEN)
        self.inc(STATS_BYTES, entry.size)
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
        self.inc(STATS_REFUSED)
        logger.warning("Mirror refused %s: %s", url, error)


def header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
