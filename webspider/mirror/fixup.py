"""The fix-up: the links of stored pages that depended on what was mirrored
after them, fixed over a mirror folder from the mirror's records.

Absolute links to files mirrored since become relative; relative links kept
as written whose file did not turn up where expected are pointed at it, or
made absolute. It first moves the kept links still waiting for their files
(``mirror.awaited``, webspider.mirror.awaited) into their pages'
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

import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webspider.mirror.links import fix_up, needs_fix_up
from webspider.mirror.safefs import UnsafePathError
from webspider.mirror.state import Entry, spans_of, unpack_pending
from webspider.page.scan import ascii_compatible, pack_spans, unpack_spans

if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable

    from webspider.mirror.links import Conversion
    from webspider.mirror.safefs import SafeTree
    from webspider.mirror.state import MirrorState, TargetIndex

#: pages the fix-up goes through together (their links' files looked up in
#: one batch), and between two commits of the crawl state
FIX_UP_COMMIT = 256


@dataclass
class FixedUp:
    #: pages rewritten
    pages: int = 0
    #: links rewritten in them
    links: int = 0


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

    def _chunk(self, chunk: list[tuple[str, Any]]) -> None:
        """Fix up the pages of ``chunk`` (URL, pending record), looking up
        their entries and their links' files together."""
        state = self.state
        if not chunk:
            return
        entries = state.index.get_many([url for url, _ in chunk])
        links = [unpack_pending(url, record) for url, record in chunk]
        keys = [key for pending, kept in links for key in (*pending, *kept)]
        targets = state.targets(keys)
        for (url, record), data, (pending, kept) in zip(
            chunk, entries, links, strict=True
        ):
            if data is None:  # its file was not recorded after all
                state.pending.delete([url])
                continue
            entry = Entry.from_json(data, url)
            entry.pending, entry.kept = pending, kept
            self.page(entry, record, targets)

    def page(self, entry: Entry, record: dict[str, Any], targets: TargetIndex) -> None:
        """Fix up one page (``entry`` with the links its pending ``record``
        keeps). Once fixed, what it keeps is only what may change still: the
        URLs left absolute (not mirrored). Relative links whose file turned
        up where they lead are plain converted links now, forgotten as those
        are; a page with nothing left has no record."""
        state, tree = self.state, self.tree
        if not needs_fix_up(entry, targets):
            if entry.kept:
                entry.kept = {}
                state.put_pending(
                    entry,
                    spans_of(record),
                    [str(t) for t in record.get("twins") or ()],
                )
            return
        body = tree.read(entry.path)
        if body is None:
            # not in this folder (another worker of a shared crawl wrote it):
            # left for that worker, or for ``scrapy combine``
            return
        spans = None
        remembered = spans_of(record)
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
        if count:
            try:
                tree.write(entry.path, fixed_page.data)
            except (OSError, UnsafePathError) as exc:
                self.refused(entry.url, exc)
                return
            entry.converted = True
            self.done.pages += 1
            self.done.links += count
            kept_spans = packed_spans(fixed_page)
        else:
            kept_spans = remembered
        # the kept links all lead where their file is now (fix_up keeps only
        # those): nothing left to check
        entry.pending, entry.kept = sorted(fixed_page.pending), {}
        entry.restore = {**entry.restore, **fixed_page.restore}
        twins = [str(t) for t in record.get("twins") or ()]
        state.update(entry)
        state.put_pending(entry, kept_spans, twins)
        for other in twins:
            # "/" and "/index.html": one file, fixed once; both must know
            # what its links stand for now (an update crawl reads it back)
            twin = state.entry(other)
            if twin is not None and twin.path == entry.path:
                twin.restore, twin.converted = entry.restore, entry.converted
                twin.restore_joins = entry.restore_joins
                state.update(twin)


def packed_spans(conversion: Conversion) -> tuple[int, array[int]] | None:
    """(CRC-32 of the file, its packed spans) for the pending record."""
    if conversion.packed_spans is not None:  # packed by the page worker
        return conversion.packed_spans
    if not conversion.spans:
        return None
    return zlib.crc32(conversion.data), pack_spans(conversion.spans)
