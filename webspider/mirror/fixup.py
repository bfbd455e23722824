"""The fix-up: the links of stored pages that depended on what was mirrored
after them, fixed over a mirror folder from the mirror's records.

Absolute links to files mirrored since become relative; relative links kept
as written whose file did not turn up where expected are pointed at it, or
made absolute. It first moves the kept links still waiting for their files
(``links.waiting``, webspider.mirror.awaited) into their pages'
``mirror.pending`` records, then streams over those a chunk at a time
(their entries and their links' files looked up together).

Two callers: the mirror extension at the end of a crawl (over its own
folder, committing the crawl state between chunks), and ``scrapy combine``
over the combined mirror of a shared crawl's workers, from the final export
of the shared index: a worker fixes up only the files it wrote, when it
stops, so the links of a worker that stopped before others wrote their
targets are fixed there.

Pure: no Scrapy.
"""

from __future__ import annotations

import base64
import zlib
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from webspider.mirror.entry import Entry
from webspider.mirror.links import fix_up, needs_fix_up
from webspider.mirror.pending import spans_of, unpack_pending
from webspider.mirror.safefs import refusal_error, refusal_json
from webspider.page.encoding import ascii_compatible
from webspider.page.spans import pack_spans, unpack_spans
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from webspider.mirror.links import Conversion, Targets
    from webspider.mirror.safefs import SafeTree
    from webspider.mirror.state import MirrorState
    from webspider.mirror.targets import TargetIndex

#: pages the fix-up goes through together (their links' files looked up in
#: one batch), and between two commits of the crawl state
FIX_UP_COMMIT = 256
#: pages of a chunk another process (``run_shared``'s ``fixer``) is asked
#: to fix up in one message, at most: small enough that the two share a
#: chunk evenly. Fewer when few pages are left (an eighth of them): a few
#: large pages (a site's indexes) are shared too, not sent in one batch
#: while this process waits for it.
SHARED_BATCH = 16
#: a page's file at least this large keeps where its waiting links are (its
#: spans, in its pending record) even when they are all kept by the URL
#: they wait for (webspider.mirror.awaited): the fix-up of one that is not
#: scans it and decides every link of it again (a 52 MB page with 500,000
#: links, 50,000 of them waiting: ~40 s), against a record of some 16
#: bytes a waiting link. A small page's rescan costs less than its record.
SPANS_KEPT_FROM = 256 * 1024


@dataclass
class FixedUp:
    #: pages rewritten
    pages: int = 0
    #: links rewritten in them
    links: int = 0


class FileFixer(Protocol):
    """Another process that fixes up files of the same folder (the page
    worker, webspider.pageworker): ``fix_files`` fixes up the pages of
    ``jobs`` (``job_json``) with ``targets`` (a TargetIndex's JSON) and
    answers one ``file_fix_json`` each, in order; None when it cannot (the
    fix-up then does them itself)."""

    async def fix_files(
        self, jobs: list[dict[str, Any]], targets: dict[str, Any]
    ) -> list[dict[str, Any]] | None: ...


@dataclass
class FileFix:
    """What fixing up one page's file gave (``fix_file``)."""

    #: links rewritten (0: the file was left as it was)
    count: int = 0
    #: the URLs left absolute in it (``Entry.pending``)
    pending: list[str] = field(default_factory=list)
    #: what the values rewritten stand for (added to ``Entry.restore``)
    restore: dict[str, str] = field(default_factory=dict)
    #: (CRC-32, packed spans) of its links for the pending record
    spans: tuple[int, array[int]] | None = None
    #: the file is not in this folder (another worker of a shared crawl
    #: wrote it): left for that worker, or for ``scrapy combine``
    missing: bool = False
    #: the write was refused
    error: OSError | None = None


def fix_file(
    tree: SafeTree,
    entry: Entry,
    targets: Targets,
    remembered: tuple[int, array[int]] | None,
) -> FileFix:
    """Fix up the file of ``entry`` (its ``pending`` and ``kept`` links, the
    ``remembered`` spans of its pending record) in ``tree``: read it, rewrite
    its links, write it (atomically) if any changed. Touches no record, so
    any process holding the folder may do it."""
    body = tree.read(entry.path)
    if body is None:
        return FileFix(missing=True)
    spans = None
    if remembered is not None and ascii_compatible(entry.encoding):
        crc, packed = remembered
        if zlib.crc32(body) == crc:
            spans = unpack_spans(body, packed, entry.encoding or "utf-8")
    fixed_page = fix_up(
        body,
        entry,
        targets,
        encoding=entry.encoding,
        html=entry.kind == "html",
        spans=spans,
    )
    count = fixed_page.count
    if not count:
        kept_spans = remembered
    else:
        try:
            tree.write(entry.path, fixed_page.data)
        except OSError as exc:  # UnsafePathError included
            return FileFix(error=exc)
        kept_spans = packed_spans(fixed_page)
    return FileFix(count, sorted(fixed_page.pending), fixed_page.restore, kept_spans)


def keeps_spans(size: int, waiting: bool, plain: bool) -> bool:
    """Whether a page of ``size`` bytes just written keeps its spans in its
    pending record: when it has one of its own (links left absolute, or kept
    expecting another file than ``url_path``'s: ``waiting``), or when it is
    large (SPANS_KEPT_FROM) and keeps links by the URL they wait for
    (``plain``)."""
    return waiting or (plain and size >= SPANS_KEPT_FROM)


def job_json(entry: Entry, record: Mapping[str, Any]) -> dict[str, Any]:
    """What ``fix_file`` needs of ``entry`` and its pending ``record``, as
    JSON (the spans as the record keeps them)."""
    job: dict[str, Any] = {
        "url": entry.url,
        "path": entry.path,
        "kind": entry.kind,
        "encoding": entry.encoding,
        "pending": entry.pending,
        "kept": entry.kept,
        "restore": entry.restore,
    }
    for name in _SPAN_FIELDS:
        if name in record:
            job[name] = record[name]
    return job


def fix_job(tree: SafeTree, job: Mapping[str, Any], targets: Targets) -> dict[str, Any]:
    """``fix_file`` of a ``job_json`` job, answered as ``file_fix_json``."""
    entry = Entry(
        url=job["url"],
        path=tuple(job["path"]),
        hash="",
        size=0,
        kind=job["kind"],
        encoding=job["encoding"],
        pending=job["pending"],
        kept=job["kept"],
        restore=job["restore"],
    )
    remembered = spans_of(job)
    return file_fix_json(fix_file(tree, entry, targets, remembered), remembered)


def file_fix_json(
    fixed: FileFix, remembered: tuple[int, array[int]] | None
) -> dict[str, Any]:
    if fixed.missing:
        return {"missing": True}
    if fixed.error is not None:
        return refusal_json(fixed.error)
    data: dict[str, Any] = {
        "count": fixed.count,
        "pending": fixed.pending,
        "restore": fixed.restore,
    }
    if fixed.spans is not remembered and fixed.spans is not None:
        crc, packed = fixed.spans
        data["crc"] = crc
        data["spans"] = base64.b64encode(packed.tobytes()).decode("ascii")
    elif fixed.spans is None:
        data["spans"] = None
    # else: the spans it was sent (its file unchanged): left out
    return data


def file_fix_from_json(
    data: Mapping[str, Any], remembered: tuple[int, array[int]] | None
) -> FileFix:
    if data.get("missing"):
        return FileFix(missing=True)
    if "refused" in data:
        return FileFix(error=refusal_error(data))
    spans = remembered
    if "spans" in data:
        spans = None
        if data["spans"] is not None:
            packed: array[int] = array("q")
            packed.frombytes(base64.b64decode(data["spans"]))
            spans = int(data["crc"]), packed
    return FileFix(
        int(data["count"]), list(data["pending"]), dict(data["restore"]), spans
    )


#: the fields of a pending record that keep its spans (MirrorState.put_pending)
_SPAN_FIELDS = ("crc", "s4", "spans")


@dataclass
class _Job:
    """A page whose file the fix-up rewrites (``FixUp._prepare``)."""

    entry: Entry
    record: dict[str, Any]
    remembered: tuple[int, array[int]] | None


class FixUp:
    """The fix-up of the pages of ``state`` stored in ``tree``; a write it
    cannot do is told to ``refused(url, error)``."""

    def __init__(
        self,
        state: MirrorState,
        tree: SafeTree,
        refused: Callable[[str, Exception], None],
    ) -> None:
        self.state = state
        self.tree = tree
        self.refused = refused
        self.done = FixedUp()

    def run(self, commit: Callable[[], None] | None = None) -> FixedUp:
        """Fix up every page with a pending record, committing (``commit``)
        every FIX_UP_COMMIT pages, so that a kill loses little and the same
        command finishes it."""
        # the kept links still waiting for their files, with their pages
        self.state.gather(commit)
        chunk: list[tuple[str, Any]] = []
        for item in self.state.pending.items():
            chunk.append(item)
            if len(chunk) == FIX_UP_COMMIT:
                self._chunk(chunk)
                chunk.clear()
                if commit is not None:
                    commit()
        self._chunk(chunk)
        return self.done

    async def run_shared(
        self, fixer: FileFixer, commit: Callable[[], None] | None = None
    ) -> FixedUp:
        """``run``, the files' work shared with ``fixer`` (another process on
        the same folder): while it fixes up a batch of a chunk's pages, this
        one fixes others up; the records are written here, as ``run``
        writes them, and committed after each chunk."""
        self.state.gather(commit)
        chunk: list[tuple[str, Any]] = []
        helper: FileFixer | None = fixer
        for item in self.state.pending.items():
            chunk.append(item)
            if len(chunk) == FIX_UP_COMMIT:
                helper = await self._shared_chunk(chunk, helper)
                chunk.clear()
                if commit is not None:
                    commit()
        await self._shared_chunk(chunk, helper)
        return self.done

    def _prepare(self, chunk: list[tuple[str, Any]]) -> tuple[list[_Job], TargetIndex]:
        """The pages of ``chunk`` (URL, pending record) whose files need
        fixing up, with where their links' files are (looked up together);
        the records of the others are settled here."""
        state = self.state
        entries = state.index.get_many([url for url, _ in chunk])
        links = [unpack_pending(url, record) for url, record in chunk]
        keys = [key for pending, kept in links for key in (*pending, *kept)]
        targets = state.targets(keys)
        jobs: list[_Job] = []
        for (url, record), data, (pending, kept) in zip(
            chunk, entries, links, strict=True
        ):
            if data is None:  # its file was not recorded after all
                state.pending.delete([url])
                continue
            entry = Entry.from_json(data, url)
            entry.pending, entry.kept = pending, kept
            if not needs_fix_up(entry, targets):
                # its kept links all lead where their files are: forgotten
                # (a record of a large page's spans alone goes with them)
                if entry.kept:
                    entry.kept = {}
                    state.put_pending(entry, spans_of(record), _twins(record))
                elif not entry.pending and not _twins(record):
                    state.pending.delete([url])
                continue
            jobs.append(_Job(entry, record, spans_of(record)))
        return jobs, targets

    def _chunk(self, chunk: list[tuple[str, Any]]) -> None:
        """Fix up the pages of ``chunk`` (URL, pending record), looking up
        their entries and their links' files together."""
        if not chunk:
            return
        jobs, targets = self._prepare(chunk)
        for job in jobs:
            fixed = fix_file(self.tree, job.entry, targets, job.remembered)
            self._record(job, fixed, targets)

    async def _shared_chunk(
        self, chunk: list[tuple[str, Any]], fixer: FileFixer | None
    ) -> FileFixer | None:
        """``_chunk``, ``fixer`` taking batches of up to SHARED_BATCH pages
        from its front (two asked at a time, so that it never waits for the
        next) while this process takes pages from its back, until they meet.
        Returns ``fixer``, or None once it failed (the rest is done here)."""
        if not chunk:
            return fixer
        # here, not at the top: the page worker imports this module for
        # fix_job, and asyncio is ~5 MB of its memory (bench/README.md, "Peak
        # RSS against plain Scrapy's, per process")
        import asyncio  # noqa: PLC0415

        jobs, targets = self._prepare(chunk)
        results: list[FileFix | None] = [None] * len(jobs)
        low, high = 0, len(jobs)
        asked: dict[asyncio.Future[list[dict[str, Any]] | None], tuple[int, int]] = {}

        def ask() -> None:
            nonlocal low
            assert fixer is not None
            size = min(SHARED_BATCH, -(-(high - low) // 8))
            end = low + size
            batch = jobs[low:end]
            keys = [k for job in batch for k in (*job.entry.pending, *job.entry.kept)]
            sent = [job_json(job.entry, job.record) for job in batch]
            future = asyncio.ensure_future(
                fixer.fix_files(sent, targets.subset(keys).to_json())
            )
            asked[future] = (low, end)
            low = end

        while low < high or asked:
            while fixer is not None and len(asked) < 2 and low < high:
                ask()
            for future in [f for f in asked if f.done()]:
                start, end = asked.pop(future)
                answers = future.result()
                if answers is None or len(answers) != end - start:
                    fixer = None  # gone: what it had is done here
                    for i in range(start, end):
                        job = jobs[i]
                        results[i] = fix_file(
                            self.tree, job.entry, targets, job.remembered
                        )
                    continue
                for i, answer in zip(range(start, end), answers, strict=True):
                    results[i] = file_fix_from_json(answer, jobs[i].remembered)
            if low < high:
                high -= 1
                job = jobs[high]
                results[high] = fix_file(self.tree, job.entry, targets, job.remembered)
                # the answers come in through the event loop
                await asyncio.sleep(0)
            elif asked:
                await asyncio.wait(asked, return_when=asyncio.FIRST_COMPLETED)
        for job, result in zip(jobs, results, strict=True):
            assert result is not None
            self._record(job, result, targets)
        return fixer

    def _record(self, job: _Job, fixed: FileFix, targets: Targets) -> None:
        """Record what fixing up the file of ``job`` gave. Once fixed, what a
        page keeps is only what may change still: the URLs left absolute
        (not mirrored). Relative links whose file turned up where they lead
        are plain converted links now, forgotten as those are; a page with
        nothing left has no record."""
        state, entry = self.state, job.entry
        if fixed.missing:
            return
        if fixed.error is not None:
            self.refused(entry.url, fixed.error)
            return
        if fixed.count:
            entry.converted = True
            self.done.pages += 1
            self.done.links += fixed.count
        # the kept links all lead where their file is now (fix_up keeps only
        # those): nothing left to check
        entry.restore = fixed_restore(entry, targets, fixed.restore)
        entry.pending, entry.kept = fixed.pending, {}
        twins = _twins(job.record)
        state.update(entry)
        state.put_pending(entry, fixed.spans, twins)
        for other in twins:
            # "/" and "/index.html": one file, fixed once; both must know
            # what its links stand for now (an update crawl reads it back)
            twin = state.entry(other)
            if twin is not None and twin.path == entry.path:
                twin.restore, twin.converted = entry.restore, entry.converted
                twin.restore_joins = entry.restore_joins
                state.update(twin)


def fixed_restore(
    entry: Entry, targets: Targets, added: Mapping[str, str]
) -> dict[str, str]:
    """``entry.restore`` once its file is fixed up: ``added`` (what the
    values the fix-up wrote stand for), and without the values its
    conversion wrote for the links it kept (``entry.kept``) whose file did
    not turn up where they expected. The fix-up replaced those (absolute
    now, or leading where the file is), so the map is the one a conversion
    after their URLs' answers writes: the same whether a page was written
    before a link's 404 came or after it (mirror-state.jsonl, which an
    update crawl reads back). Worked out from the entry and the targets,
    not from the values the rewrite met: a fix-up killed after it wrote
    the file but before its record was committed meets the values it wrote
    when it runs again, and must leave the same map."""
    moved: set[str] = set()
    for key, expected in entry.kept.items():
        target = targets.get(key)
        if target is None or "/".join(target.path) != expected:
            moved.add(key)
    if not moved:
        return {**entry.restore, **added}
    restore = {
        value: stands_for
        for value, stands_for in entry.restore.items()
        if canonical_url(stands_for.partition("#")[0]) not in moved
    }
    restore.update(added)
    return restore


def _twins(record: Mapping[str, Any]) -> list[str]:
    return [str(t) for t in record.get("twins") or ()]


def packed_spans(conversion: Conversion) -> tuple[int, array[int]] | None:
    """(CRC-32 of the file, its packed spans) for the pending record."""
    if conversion.packed_spans is not None:  # packed by the page worker
        return conversion.packed_spans
    if not conversion.spans:
        return None
    return zlib.crc32(conversion.data), pack_spans(conversion.spans)
