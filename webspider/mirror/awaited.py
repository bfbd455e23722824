"""Relative links kept as written, by the URL whose file they wait for.

A page written before the files of some of its links keeps those relative
links as the page wrote them (or points them where the file is expected):
they open the right file once it is mirrored under its expected name
(``url_path``). The end-of-crawl fix-up must check the ones whose file did
not turn up there. Most do turn up, while the crawl runs: so these links are
kept by the URL they wait for, and forgotten (one range delete) when that
URL's file is written where they expect it. What is left when the crawl
ends is what the fix-up looks at (``gather`` hands it over to the pages'
``mirror.pending`` records).

Records (webspider.records):

- ``links.waiting`` (webspider.utils.waitinglinks), bit ``MIRROR``:
  ``<target code>\\n<page code>``: the page keeps a link to the target (of
  the same site: a relative link never leaves it), expecting its file at
  ``url_path(target)``. The row is shared with the reports' referrer of
  the same link (their bit ``REPORTS``): written once for both; the
  mirror's bit is cleared over its target's range (the row goes when no
  bit is left).

A URL's code is the crawl's shared one (webspider.utils.urlcodes.UrlCodes:
``urls.codes``, 4 characters for nearly every URL, the URL written once
for every feature that names it): a waiting link names its two URLs in 10
characters instead of their paths twice (30 on a small site, a hundred on
many). The mirror's names of files (``mirror.paths``) name their owner by
its code too.

Writes are buffered and written by ``flush`` (the mirror calls it when the
crawl state commits, so they are committed with the acknowledgements of
the pages they came from; and when the buffer holds ``_BUFFER`` targets): a
link whose target is written in the same batch never reaches the store.

Pure: no Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from webspider.records import flags_of
from webspider.utils.urlcodes import UrlCodes
from webspider.utils.waitinglinks import MIRROR, NS_WAITING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from webspider.records import RecordStore

#: the namespace (shared with the reports: webspider.utils.waitinglinks)
NS_AWAITED = NS_WAITING

#: targets buffered, at most (a crawl without a crawl state never commits)
_BUFFER = 4096


class Awaited:
    """The mirror's part of ``links.waiting`` in ``store`` (see the module
    docstring)."""

    def __init__(self, store: RecordStore) -> None:
        self.records = store.records(NS_AWAITED)
        self.codes = UrlCodes.of(store)
        #: target URL → the URLs of the pages waiting for it (this batch)
        self._new: dict[str, list[str]] = {}
        #: the pages of ``_new`` (this batch), each once: what ``flush``
        #: codes with the targets, where the pages' lists repeat each page
        #: for every link it keeps (~17 a page)
        self._pages: dict[str, None] = {}
        #: targets written where expected (this batch)
        self._landed: set[str] = set()

    # -- the crawl -----------------------------------------------------------------
    def wait(self, page: str, targets: Iterable[str]) -> None:
        """``page`` keeps relative links to ``targets`` (canonical URLs of its
        own site, expected at ``url_path``'s path)."""
        landed, new = self._landed, self._new
        kept = False
        for target in targets:
            if target not in landed:
                kept = True
                waiting = new.get(target)
                if waiting is None:
                    new[target] = [page]
                else:
                    waiting.append(page)
        if kept:
            self._pages[page] = None
        if len(new) >= _BUFFER:
            self.flush()

    def landed(self, target: str) -> None:
        """``target``'s file is written where ``url_path`` says: the links
        waiting for it are right as they are."""
        self._new.pop(target, None)
        self._landed.add(target)
        if len(self._landed) >= _BUFFER:
            self.flush()

    def flush(self) -> None:
        """Write what this batch added and forget what it answered."""
        new, pages = self._new, self._pages
        self._pages = {}
        if new:
            self._new = {}
            urls = dict.fromkeys(new)
            urls.update(pages)
            code_of = self.codes.give(list(urls))
            self.records.flag_many(
                [
                    (code_of[target] + "\n" + code_of[page], MIRROR, None)
                    for target, waiting in new.items()
                    for page in waiting
                ]
            )
        if self._landed:
            landed = list(self._landed)
            self._landed.clear()
            code_of = self.codes.find(landed)
            self.records.unflag_prefixes(
                [code + "\n" for code in code_of.values()], MIRROR
            )

    def forget(self, keys: list[str]) -> None:
        """Forget the rows ``keys`` (of ``left``): the reports' part stays."""
        self.records.unflag(keys, MIRROR)

    def clear(self) -> None:
        """Forget every waiting link (the shared codes stay: see
        webspider.utils.urlcodes; the reports' part of the rows too)."""
        self._new.clear()
        self._pages.clear()
        self._landed.clear()
        self.records.unflag_prefix("", MIRROR)

    # -- the end -------------------------------------------------------------------
    def left(self, size: int) -> Iterator[list[tuple[str, str, str]]]:
        """What still waits, in chunks of up to ``size`` (key, page URL,
        target URL), for the fix-up. The caller deletes each chunk's keys
        once it recorded them elsewhere (so it may commit between chunks)."""
        self.flush()
        rows: list[str] = []
        for key, value in self.records.items():
            if not flags_of(value) & MIRROR:
                continue  # only the reports' (a broken or unknown target)
            rows.append(key)
            if len(rows) >= size:
                yield self._resolve(rows)
                rows = []
        if rows:
            yield self._resolve(rows)

    def _resolve(self, keys: list[str]) -> list[tuple[str, str, str]]:
        """(key, page URL, target URL) of rows of ``links.waiting``; the
        URLs are empty for a row that is not one of ours."""
        parts = [key.partition("\n") for key in keys]
        codes = list(
            dict.fromkeys(code for head, _, tail in parts for code in (head, tail))
        )
        url_of = dict(zip(codes, self.codes.urls(codes), strict=True))
        out: list[tuple[str, str, str]] = []
        for key, (head, _, tail) in zip(keys, parts, strict=True):
            page, target = url_of.get(tail), url_of.get(head)
            if page is None or target is None:
                out.append((key, "", ""))
            else:
                out.append((key, page, target))
        return out
