"""What the mirror remembers, as records in the crawl state.

The mirror's per-URL data lives in namespaces of records (webspider.records)
of the crawl state, committed with the acknowledgements of the pages they
came from, never held whole in memory:

- ``mirror.index``: canonical URL (as ``<site code><path>``, the
  crawl's shared site codes: ``_BySite``) → its Entry (``Entry.index_json``, a
  compact record: where the file is, its hash, validators, kind, the run
  that fetched it, the ``restore`` map of the links its conversion wrote
  that do not say their URL themselves);
- where a URL's file is (what conversion looks up per link: ``targets``)
  is its index record's path (none when ``url_path`` gives it: ``1``, see
  ``where_value``), or, for a page whose file is being written, what
  ``reserve`` keeps in memory until ``put`` records it (format 5; a row a
  page of its own before, ``mirror.where``, ~24 bytes);
- ``mirror.paths``: case-folded path (its 12-character id:
  webspider.utils.urlcodes.url_ids, a hash, so no lookup) → the URL
  that owns the file name (the
  first stored under it; its twins share the file), as its code
  (webspider.utils.urlcodes.UrlCodes, the crawl's shared codes: 4
  characters where its ``<site code><path>`` took ~20);
- ``mirror.alias``: redirecting URL → the canonical URL it led to;
- ``mirror.pending``: URL → what the end-of-crawl fix-up must look at in its
  file: ``pending`` (URLs left absolute), ``kept`` (URL → expected path of
  relative links kept as written, when it is not the one ``url_path``
  gives), ``twins`` (other URLs sharing the file) and ``crc``/``spans``
  (where those links are in the file written); a page has one only when
  it has such links, and when the crawl ends, for the links ``awaited``
  still keeps;
- ``links.waiting`` (bit ``MIRROR``; a row shared with the reports'
  referrer of the same link, webspider.utils.waitinglinks): the other kept
  links, by the URL whose file they wait for, forgotten when it is written where they
  expect it (webspider.mirror.awaited); ``gather`` moves what is left
  into ``mirror.pending`` for the fix-up;
- ``mirror.run``: ``"run"`` → this crawl's run number, whether it finished,
  and the mirror's root.

``<output>/mirror-state.jsonl`` is the export: written (atomically, streamed)
when a crawl ends, in the format older versions wrote and read (a header
line, one line per URL, one per alias, a run line), and imported once into a
crawl state that has no mirror index (the next crawl after a finished one,
which starts a fresh crawl state; a mirror made by an older version).

Pure: no Scrapy, plain JSON (nothing is unpickled from disk).
"""

from __future__ import annotations

import json
import logging
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeVar

from webspider.mirror.awaited import NS_AWAITED, Awaited
from webspider.mirror.entry import (
    Entry,
    export_line,
    fetched_or_gone,
    record_where,
    split,
    where_path,
    where_value,
)
from webspider.mirror.pending import (
    add_kept,
    pack_pending,
    put_spans,
    split_kept,
    unpack_pending,
)
from webspider.mirror.targets import Target, TargetIndex
from webspider.utils.atomic import open_atomic
from webspider.utils.recent import Recent
from webspider.utils.urlcodes import UrlCodes, url_id, url_ids

if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from pathlib import Path

    from webspider.mirror.entry import Segments
    from webspider.records import Records, RecordStore
    from webspider.utils.sitecodes import SiteCodes

logger = logging.getLogger(__name__)

T = TypeVar("T")

VERSION = 1

NS_INDEX = "mirror.index"
NS_PATHS = "mirror.paths"
NS_ALIAS = "mirror.alias"
NS_PENDING = "mirror.pending"
NS_RUN = "mirror.run"
NAMESPACES = (
    NS_INDEX,
    NS_PATHS,
    NS_ALIAS,
    NS_PENDING,
    NS_RUN,
    NS_AWAITED,
)

#: records imported or exported per batch
_BATCH = 1000
#: URLs fetched and not mirrored that MirrorState keeps in memory (the
#: latest): ~100 bytes each
ABSENT_KEPT = 4096
#: redirects (``mirror.alias``) MirrorState keeps in memory, all of them
#: or none (~200 bytes each): while it holds every one, a URL not in it has
#: none, and ``targets`` need not ask the records for the links that have
#: no file
ALIASES_KEPT = 4096
#: URLs whose file's place a generation of the index's memory holds (two
#: generations; ~125 bytes each: the URL, the dict's slot, and its place,
#: nearly always 1, the URL's own path): as many as the link ledger's
#: states (webspider.reports.links.STATES_KEPT)
WHERE_KEPT = 16384


class _Hashed:
    """A namespace of records keyed by the 12-character ids of its keys
    (``url_ids``): what ``mirror.paths`` is looked up by (a path) is
    written as a third of its length, and never listed. Two keys sharing
    an id (about n²/2⁷³) would share a record."""

    __slots__ = ("records",)

    def __init__(self, records: Records) -> None:
        self.records = records

    def get(self, key: str) -> Any | None:
        return self.records.get(url_id(key))

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        return self.records.get_many(url_ids(keys))

    def put(self, key: str, value: Any) -> None:
        self.records.put(url_id(key), value)

    def put_new(self, key: str, value: Any) -> bool:
        return self.records.put_new(url_id(key), value)

    def delete(self, keys: Sequence[str]) -> None:
        self.records.delete(url_ids(keys))

    def clear(self) -> None:
        self.records.clear()


class _BySite:
    """A namespace of records keyed by URL, written under ``<site
    code><path>`` (webspider.utils.sitecodes: the crawl's shared site codes,
    ``urls.sites``, 1 character for the first 36 sites where ``https://
    www.example.org`` took 23): what ``mirror.index`` is read and written
    by (a URL) loses its site. ``items`` still streams in URL order: site by
    site, the sites in the order of their URLs (``<site>/``), each site's
    keys in order (its URLs' order: they share the site)."""

    __slots__ = ("records", "sites")

    def __init__(self, records: Records, sites: SiteCodes) -> None:
        self.records = records
        self.sites = sites

    def get(self, url: str) -> Any | None:
        key = self.sites.shorts([url])[0]
        return None if key is None else self.records.get(key)

    def get_many(self, urls: Sequence[str]) -> list[Any | None]:
        """The records of ``urls`` (a read: a URL whose site has no code has
        none, and gets no code)."""
        shorts = self.sites.shorts(urls)
        keys = [key for key in shorts if key is not None]
        if len(keys) == len(shorts):
            return self.records.get_many(keys)
        found = iter(self.records.get_many(keys))
        return [None if key is None else next(found) for key in shorts]

    def put(self, url: str, value: Any) -> None:
        self.records.put(self.sites.short(url), value)

    def delete(self, urls: Sequence[str]) -> None:
        short = self.sites.short
        self.records.delete([short(url) for url in urls])

    def clear(self) -> None:
        self.records.clear()

    def count(self) -> int:
        return self.records.count()

    def items(self) -> Iterator[tuple[str, Any]]:
        """(URL, record) of every record, streamed in URL order."""
        sites = sorted(
            (str(site) + "/", key[1:]) for key, site in self.sites.records.items("#")
        )
        records = self.records
        for site, code in sites:
            # a URL without a path (the site alone, a query after the host)
            # is the code alone, and sorts before the site's other URLs
            bare = records.get(code)
            if bare is not None:
                yield site[:-1], bare
            cut = len(code)
            for key, value in records.items(code + "/"):
                yield site[:-1] + key[cut:], value


class _Index(_BySite):
    """``mirror.index``: a ``_BySite`` that also answers where a URL's file
    is (``where_many``: ``record_where`` of its record), remembering the
    answers of the URLs asked or written lately. ``targets`` asks for every
    link of every page, most of them the links every page repeats: a
    remembered one costs a dict lookup where reading it cost the record's
    JSON decoded again (``SQLiteRecords`` keeps its text, and decodes it on
    every read: the caller may change what it got): 76,441 decodes in a
    4,000-page crawl, and ``MirrorState.targets`` 0.8 s of CPU against 0.3
    remembered (bench/README.md, "The store's work a page, second pass").
    Two generations of ``WHERE_KEPT`` URLs (webspider.utils.recent). The
    crawl process is the only writer of an embedded state and every write
    of the index goes through here (``put`` remembers the URL's new place,
    ``delete`` forgets the URL, ``clear`` all), so an answer is never stale,
    and a URL remembered without a place has no record (``get`` need not
    read it); a shared (Redis) state's other workers write it too:
    ``remember=False``, every answer read."""

    __slots__ = ("recent",)

    def __init__(self, records: Records, sites: SiteCodes, remember: bool) -> None:
        super().__init__(records, sites)
        self.recent: Recent[str, str | int | None] | None = (
            Recent(WHERE_KEPT) if remember else None
        )

    def where_many(self, urls: Sequence[str]) -> list[str | int | None]:
        """The ``where_value`` each of ``urls``' index record says (None: it
        has none)."""
        recent = self.recent
        if recent is None:
            return self._read_where(urls)
        out, at, asked = recent.lookup(urls)
        if asked:
            recent.fill(out, at, asked, self._read_where(asked))
        return out

    def _read_where(self, urls: Sequence[str]) -> list[str | int | None]:
        return [
            None if data is None else record_where(data, url)
            for url, data in zip(urls, self.get_many(urls), strict=True)
        ]

    def get(self, url: str) -> Any | None:
        """``url``'s record; not read when it is remembered to have none (a
        page's own URL was nearly always asked for as another page's link
        before it is fetched: a read of the records saved a page)."""
        recent = self.recent
        if recent is not None:
            known, _, asked = recent.lookup((url,))
            if not asked and known[0] is None:
                return None
        return super().get(url)

    def put(self, url: str, value: Any, where: str | int | None = None) -> None:
        """Put ``url``'s record ``value``; ``where``: the ``where_value`` it
        says, when known (else read from it)."""
        if self.recent is not None:
            # where the record says the file is, remembered: the links to
            # the page read from here (a dict look-up) rather than the file
            if where is None:
                where = record_where(value, url)
            self.recent.keep(((url, where),))
        super().put(url, value)

    def delete(self, urls: Sequence[str]) -> None:
        if self.recent is not None:
            self.recent.forget(urls)
        super().delete(urls)

    def clear(self) -> None:
        if self.recent is not None:
            self.recent.clear()
        super().clear()


class _Aliases:
    """``aliases`` of a MirrorState, read from its records (``get``, ``in``)."""

    __slots__ = ("_records",)

    def __init__(self, records: Records) -> None:
        self._records = records

    def get(self, url: str, default: T | None = None) -> str | T | None:
        found = self._records.get(url)
        return default if found is None else str(found)

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and self._records.get(url) is not None


class MirrorState:
    """The mirror's records (see the module docstring) in ``store``."""

    def __init__(self, store: RecordStore, root: str, shared: bool = False) -> None:
        self.root = root
        #: the records are a shared crawl's (Redis), whose workers each write
        #: a mirror folder of their own: the root they name is any worker's
        self.shared = shared
        #: the crawl's shared URL codes (the index's site codes, the names'
        #: owners; the waiting links' too)
        self.codes = UrlCodes.of(store)
        self.index = _Index(store.records(NS_INDEX), self.codes.sites, not shared)
        #: URL → its ``where_value``, for the pages ``reserve`` placed whose
        #: index record is not written yet (``put``, ``release``): a few,
        #: the pages being stored
        self.reserved: dict[str, str | int] = {}
        self.paths = _Hashed(store.records(NS_PATHS))
        self.alias_records = store.records(NS_ALIAS)
        self.pending = store.records(NS_PENDING)
        self.meta = store.records(NS_RUN)
        self.awaited = Awaited(store)
        self.aliases = _Aliases(self.alias_records)
        #: every record of ``alias_records`` (URL → target), while there are
        #: at most ALIASES_KEPT; None: not known (read the records). Filled
        #: by ``begin``; not on a shared state (other workers write them).
        self._all_aliases: dict[str, str] | None = None
        #: canonical URLs this process saw fetched and not mirrored, for
        #: good (``mark_absent``): the last ABSENT_KEPT, in memory only
        #: (after a resume, or past them, links to the others wait for the
        #: fix-up, which writes them the same)
        self.absent: dict[str, None] = {}
        #: the run this crawl is, and whether the last one to write the
        #: state finished (``begin``)
        self.run = 0
        self.finished = True

    # -- the run -------------------------------------------------------------------
    def begin(self, export: Path, continued: bool) -> tuple[int, bool]:
        """Start this crawl's run (or go on with the one an interrupted crawl
        began, when ``continued``): its number, and whether it goes on. A
        state without the mirror's records imports ``export`` first."""
        info = self.meta.get("run")
        if info is not None and not self.shared and info.get("root") != self.root:
            logger.warning(
                "The crawl state describes another mirror (%s); starting afresh",
                info.get("root"),
            )
            self.clear()
            info = None
        # records in the crawl state: the crawl that wrote them is continued
        # (a fresh state has none), even if it was killed after it recorded
        # its end but before the crawl state did
        kept = info is not None
        if info is None:
            info = self.import_file(export)
        run, finished = int(info.get("run", 0)), bool(info.get("finished", True))
        goes_on = continued and run > 0 and (kept or not finished)
        self.run = run if goes_on else run + 1
        self.finished = False
        self.meta.put("run", {"run": self.run, "finished": False, "root": self.root})
        self._all_aliases = None
        if not self.shared and self.alias_records.count() <= ALIASES_KEPT:
            self._all_aliases = {
                url: str(target) for url, target in self.alias_records.items()
            }
        return self.run, goes_on

    def end(self, finished: bool) -> None:
        self.finished = finished
        self.meta.put("run", {"run": self.run, "finished": finished, "root": self.root})

    def clear(self) -> None:
        for records in (
            self.index,
            self.paths,
            self.alias_records,
            self.pending,
            self.meta,
        ):
            records.clear()
        self.awaited.clear()
        if self._all_aliases is not None:
            self._all_aliases = {}

    # -- reading ---------------------------------------------------------------------
    def entry(self, url: str) -> Entry | None:
        """The index entry of ``url`` (without ``pending``/``kept``)."""
        data = self.index.get(url)
        return None if data is None else Entry.from_json(data, url)

    def get(self, url: str) -> Target | None:
        """Where ``url`` (or the URL it redirected to) is stored."""
        found, path = url, self.where(url)
        if path is None:
            target = self._alias(url)
            if target is not None:
                found, path = str(target), self.where(target)
        return None if path is None else Target(split(where_path(found, path)))

    def where(self, url: str) -> str | int | None:
        """``url``'s ``where_value`` (None: it has no file)."""
        value = self.reserved.get(url)
        if value is None:
            [value] = self.index.where_many([url])
        return value

    def _where_many(self, urls: Sequence[str]) -> list[str | int | None]:
        out = self.index.where_many(urls)
        reserved = self.reserved
        if reserved:
            for i, url in enumerate(urls):
                value = reserved.get(url)
                if value is not None:
                    out[i] = value
        return out

    def mark_absent(self, key: str) -> None:
        """The page at canonical URL ``key`` was fetched and will not be
        mirrored in this run (a 404): links to it found from now on are
        written absolute at once, as the fix-up would leave them."""
        absent = self.absent
        absent[key] = None
        if len(absent) > ABSENT_KEPT:
            del absent[next(iter(absent))]

    def targets(self, urls: Iterable[str]) -> TargetIndex:
        """A snapshot of where ``urls`` are stored, in a few batched reads."""
        keys = list(dict.fromkeys(urls))
        found = TargetIndex()
        where = found.where
        missing = []
        for key, value in zip(keys, self._where_many(keys), strict=True):
            if value is None:
                missing.append(key)
            else:
                where[key] = value
        if missing:
            known = self._all_aliases
            if known is None:
                aliases = {
                    key: str(target)
                    for key, target in zip(
                        missing, self.alias_records.get_many(missing), strict=True
                    )
                    if target is not None
                }
            else:
                aliases = {key: known[key] for key in missing if key in known}
            found.aliases = aliases
            absent = self.absent
            if absent:
                found.absent = {
                    key for key in missing if key in absent and key not in aliases
                }
            led = [t for t in dict.fromkeys(aliases.values()) if t not in where]
            if led:  # (nearly every page has no redirected link: no look-up)
                for key, value in zip(led, self._where_many(led), strict=True):
                    if value is not None:
                        where[key] = value
        return found

    def owner(self, path: Segments) -> str | None:
        return self.owner_of(path_key(path))

    def owner_of(self, key: str) -> str | None:
        """The owner of a case-folded path (``path_key``)."""
        found = self.paths.get(key)
        if found is None:
            return None
        return self.codes.urls([str(found)])[0]

    # -- writing ---------------------------------------------------------------------
    def take(self, url: str, path: Segments) -> str | None:
        """``owner(path)``; when it has none, ``url`` owns it from now on
        (``reserve`` it, with ``owned``, or ``release`` it): one
        ``put_new`` where a read that finds no owner and then a ``put_new``
        were two statements (the first of a new name nearly always finds
        none)."""
        key = path_key(path)
        code = self.codes.give([url])[url]
        if self.paths.put_new(key, code):
            return None
        return self.owner_of(key)

    def _place(
        self,
        url: str,
        path: Segments,
        plain: str | None = None,
        owned: bool = False,
    ) -> str | int:
        """``url`` is at ``path`` now: the name's owner (its index record,
        or ``reserved``, says the rest). Returns its ``where_value``
        (``plain``: the path ``url_path`` gives ``url``, when worked out
        already; ``owned``: ``url`` took the name already, ``take``)."""
        where = "/".join(path)
        if plain is None:
            value = where_value(url, where)
        else:
            value = 1 if where == plain else where
        old = self.where(url)
        if old == value:
            return value
        if old is not None:
            key = where_path(url, old).casefold()
            if self.owner_of(key) == url:
                self.paths.delete([key])
        if not owned or old is not None:  # (old's name may be this one's, cased)
            self._own(url, where)
        return value

    def _own(self, url: str, where: str) -> None:
        # the first URL stored under a name owns it (twins share a file)
        code = self.codes.give([url])[url]
        self.paths.put_new(where.casefold(), code)

    def reserve(
        self, entry: Entry, plain: str | None = None, owned: bool = False
    ) -> str | int:
        """Know where ``entry`` goes (for links to it, its own included)
        before its file is written, without recording it in the index.
        Returns its ``where_value`` (``put`` may be given it).
        ``plain``: ``"/".join(url_path(entry.url))``, when worked out
        already (by the page worker); ``owned``: ``take`` gave it the name."""
        value = self._place(entry.url, entry.path, plain, owned)
        self.reserved[entry.url] = value
        return value

    def release(self, entry: Entry, old: Entry | None) -> None:
        """Its file was not written after all: forget where it went."""
        key = path_key(entry.path)
        if self.owner_of(key) == entry.url:
            self.paths.delete([key])
        self.reserved.pop(entry.url, None)
        if old is not None:
            # its index record is the old one still: it owns its name again
            self._own(old.url, "/".join(old.path))

    def put(
        self,
        entry: Entry,
        spans: tuple[int, array[int]] | None = None,
        plain: Sequence[str] | None = None,
        placed: str | int | None = None,
        *,
        fresh: bool = False,
        packed_restore: Mapping[str, Any] | None = None,
        record: list[Any] | None = None,
    ) -> None:
        """Record ``entry``, whose file is written, with what the fix-up must
        look at in it (``pending``, ``kept``, where their links are:
        ``spans``; ``plain``: see ``put_pending``). ``placed``: what
        ``reserve`` returned, when the file is where it was reserved;
        ``fresh``: the URL has no index record yet (so no pending one);
        ``packed_restore``: see ``Entry.index_json``; ``record``: the
        index record of ``entry``, made already (by the page worker; its
        fields checked by webspider.pageworker.client.record_mismatch),
        stored as it is unless it says the file is elsewhere (then made
        here, with a warning)."""
        value = self._place(entry.url, entry.path) if placed is None else placed
        if record is not None and record_where(record, entry.url) != value:
            logger.warning(
                "Mirror: the index record the page worker made for %s does not "
                "say where its file is (%s); made here",
                entry.url,
                where_path(entry.url, value),
            )
            record = None
        if record is None:
            record = entry.index_json(value == 1, packed_restore)
        self.index.put(entry.url, record, value)
        self.reserved.pop(entry.url, None)
        self.put_pending(entry, spans, plain=plain, fresh=fresh)
        if value == 1:
            # links kept as written that wait for this file lead to it now
            self.awaited.landed(entry.url)

    def update(self, entry: Entry) -> None:
        """Record ``entry``'s index fields (its file and fix-up unchanged)."""
        self.index.put(entry.url, entry.index_json())

    def put_pending(
        self,
        entry: Entry,
        spans: tuple[int, array[int]] | None = None,
        twins: Sequence[str] = (),
        plain: Sequence[str] | None = None,
        fresh: bool = False,
    ) -> None:
        """What the fix-up must look at in ``entry``'s file (``fresh``: it has
        no pending record to replace). ``plain``: the
        kept links that are of the page's site and expect the file
        ``url_path`` gives (``split_kept``), kept by the URL they wait for
        (``awaited``), when ``entry.kept`` holds only the others (those go
        into the page's ``mirror.pending`` record); None: ``entry.kept``
        holds them all. ``spans`` given with ``plain`` ones (a large page:
        webspider.mirror.fixup.keeps_spans) are recorded even when the page
        keeps nothing else."""
        if plain is None:
            plain, odd = split_kept(entry.url, entry.kept)
        else:
            odd = entry.kept
        if plain:
            self.awaited.wait(entry.url, plain)
        # a large page's spans are kept for the links kept by target too
        # (webspider.mirror.fixup.keeps_spans): a record of its spans alone
        if not entry.pending and not odd and not twins and (spans is None or not plain):
            if not fresh:
                self.pending.delete([entry.url])
            return
        record = pack_pending(entry.url, entry.pending, odd)
        if twins:
            record["twins"] = list(twins)
        if spans is not None:
            put_spans(record, spans)
        self.pending.put(entry.url, record)

    def add_twin(self, owner: str, url: str) -> None:
        """``url`` shares ``owner``'s file: the fix-up of that file tells it
        what its links stand for then. (A record of its own when the owner
        has none: its kept links may still wait in ``awaited``.)"""
        record = self.pending.get(owner) or {}
        if url not in record.get("twins", ()):
            record.setdefault("twins", []).append(url)
            self.pending.put(owner, record)

    def flush(self) -> None:
        """Write what is buffered (``awaited``): before a commit."""
        self.awaited.flush()

    def gather(self, commit: Callable[[], None] | None = None) -> int:
        """Move the kept links still waiting (``awaited``) into their pages'
        ``mirror.pending`` records, where the fix-up reads them, a chunk at a
        time (``commit`` after each: a kill loses nothing, each chunk is
        moved whole). Returns how many."""
        moved = 0
        for chunk in self.awaited.left(_BATCH):
            by_page: dict[str, list[str]] = {}
            for _, page, target in chunk:
                if page:
                    by_page.setdefault(page, []).append(target)
            pages = list(by_page)
            self.pending.put_many(
                [
                    (page, add_kept(page, record, by_page[page]))
                    for page, record in zip(
                        pages, self.pending.get_many(pages), strict=True
                    )
                ]
            )
            self.awaited.forget([key for key, _, _ in chunk])
            moved += len(chunk)
            if commit is not None:
                commit()
        return moved

    def alias(self, url: str, target: str) -> None:
        if url != target and self._alias(url) != target:
            self.alias_records.put(url, target)
            known = self._all_aliases
            if known is not None:
                known[url] = target
                if len(known) > ALIASES_KEPT:
                    self._all_aliases = None  # read from the records from now on

    def _alias(self, url: str) -> str | None:
        """The URL ``url`` redirected to, if it did."""
        known = self._all_aliases
        if known is not None:
            return known.get(url)
        found = self.alias_records.get(url)
        return None if found is None else str(found)

    def __iter__(self) -> Iterator[Entry]:
        """Every entry (without ``pending``/``kept``), streamed in URL order."""
        for url, data in self.index.items():
            yield Entry.from_json(data, url)

    def unseen(self, run: int) -> Iterator[Entry]:
        """The entries not gone that ``run`` did not fetch (without
        ``pending``/``kept``), in URL order: what the end of a finished crawl
        marks gone. An index record's run and flags are read where they
        are (``index_json``), without decoding the others (every entry, on
        a first crawl)."""
        for url, data in self.index.items():
            if fetched_or_gone(data, run):
                continue
            entry = Entry.from_json(data, url)
            if not entry.gone and entry.run != run:
                yield entry

    # -- the export ----------------------------------------------------------------
    def header(self) -> dict[str, Any]:
        return {"mirror_root": self.root, "version": VERSION}

    def export(self, path: Path) -> None:
        """Write ``path`` (mirror-state.jsonl) from the records, streamed."""
        self.gather()
        dumps = json.JSONEncoder(ensure_ascii=False).encode
        with open_atomic(path) as fh:
            fh.write(dumps(self.header()) + "\n")
            # the index streams in URL order, keyed by site code; the pending
            # records of a batch of its URLs are read together
            rows = self.index.items()
            while chunk := list(islice(rows, _BATCH)):
                urls = [url for url, _ in chunk]
                for (url, data), record in zip(
                    chunk, self.pending.get_many(urls), strict=True
                ):
                    line = export_line(data, url)
                    if record is not None:
                        line["pending"], line["kept"] = unpack_pending(url, record)
                    else:
                        line["pending"], line["kept"] = [], {}
                    fh.write(dumps(line) + "\n")
            for url, target in self.alias_records.items():
                fh.write(dumps({"alias": url, "url": target}) + "\n")
            fh.write(dumps({"run": self.run, "finished": self.finished}) + "\n")

    def import_file(self, path: Path) -> dict[str, Any]:
        """Read an export (or the append log of an older version) into the
        records; the run line it ends with ({} when there is none)."""
        info: dict[str, Any] = {}
        try:
            fh = path.open(encoding="utf-8")
        except FileNotFoundError:
            return info
        entries: dict[str, Entry] = {}
        count = 0
        with fh:
            for number, line in enumerate(fh):
                try:
                    data = json.loads(line)
                    if number == 0:
                        # a shared crawl's export names the mirror of the
                        # worker that wrote it (any worker's)
                        if not self.shared and data.get("mirror_root") != self.root:
                            logger.warning(
                                "%s describes another mirror (%s); starting afresh",
                                path,
                                data.get("mirror_root"),
                            )
                            return {}
                        continue
                    if "run" in data and "url" not in data:
                        info = {
                            "run": int(data["run"]),
                            "finished": bool(data["finished"]),
                        }
                    elif "alias" in data:
                        self.alias(str(data["alias"]), str(data["url"]))
                    else:
                        entry = Entry.from_json(data)
                        # an append log repeats a URL: the last line wins
                        entries.pop(entry.url, None)
                        entries[entry.url] = entry
                        if len(entries) >= _BATCH:
                            self._import(entries)
                            count += len(entries)
                            entries.clear()
                except (ValueError, KeyError, TypeError):
                    # a line cut by a crash: everything before it still counts
                    logger.warning("%s: skipping unreadable line %d", path, number + 1)
        self._import(entries)
        count += len(entries)
        if count:
            logger.info("Mirror: %d URLs imported from %s", count, path)
        return info

    def _import(self, entries: Mapping[str, Entry]) -> None:
        for entry in entries.values():
            # not ``put``: no file of this crawl's was written
            self._place(entry.url, entry.path)
            self.index.put(entry.url, entry.index_json())
            self.put_pending(entry)


def find(entries: Mapping[str, T], aliases: Mapping[str, str], url: str) -> T | None:
    """The entry of ``url``, or of the URL it redirected to."""
    entry = entries.get(url)
    if entry is None:
        target = aliases.get(url)
        if target is not None:
            entry = entries.get(target)
    return entry


def path_key(path: Segments) -> str:
    """Names that differ only in case are one file on some file systems."""
    return "/".join(path).casefold()
