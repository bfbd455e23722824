"""Links to a fragment (``page.html#section``) whose page has no such anchor.

An anchor is the value of an ``id`` attribute, or the ``name`` of an ``<a>``
(HTML's legacy named anchors); they are found with a regular expression over
the page's text rather than a second parse. Fragments that are not anchors
are never reported: the empty fragment and ``top`` (HTML scrolls to the top),
text fragments (``#:~:text=``) and script routes (``#!/path``, ``#/path``).

Off by default because it costs room: the anchors of every HTML page are
kept until the end of the crawl, since a link to a page's fragment may come
after the page was fetched. They are kept in records (webspider.records), so
in the crawl state with the rest of the ledger: no memory per page, and a
resumed crawl (after Ctrl-C, kill -9…) reports the same missing anchors as
an uninterrupted one. Namespaces:

- ``reports.anchor_pages``: page key (canonical URL) → its anchors (sorted).
- ``reports.anchor_targets``: ``"<page key>\n<fragment>"`` → ``[URL, state]``,
  state ``0`` linked before the page was fetched, ``1`` missing, ``2`` found.
- ``reports.anchor_referrers``: ``"<page key>\n<fragment>\n<referring page>"``
  → ``[text, tag]`` of the page's first link to it; kept while the state is
  ``0`` or ``1``. One per referring page, so a page read twice (fetched
  again after a kill) adds nothing.
- ``reports.anchor_totals``: ``missing``, the count of missing anchors.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from webspider.records import records_or_memory

if TYPE_CHECKING:
    from collections.abc import Iterator

    from webspider.records import RecordStore
    from webspider.reports.links import Referrer

NS_PAGES = "reports.anchor_pages"
NS_TARGETS = "reports.anchor_targets"
NS_REFERRERS = "reports.anchor_referrers"
NS_TOTALS = "reports.anchor_totals"
NAMESPACES = (NS_PAGES, NS_TARGETS, NS_REFERRERS, NS_TOTALS)

# states of a target in NS_TARGETS
_WANTED = 0
_MISSING = 1
_FOUND = 2

_ID_RE = re.compile(
    r"""\s(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE
)
_TAG_RE = re.compile(r"<[a-zA-Z][^>]*>")


def page_anchors(text: str) -> frozenset[str]:
    """The ids and names of the elements of an HTML page."""
    anchors: set[str] = set()
    # up to the last ">": a "<" after it would make every later "<" scan to
    # the end of the page for nothing (quadratic on "<a<a<a…")
    for tag in _TAG_RE.finditer(text, 0, text.rfind(">") + 1):
        for m in _ID_RE.finditer(tag.group(0)):
            value = m.group(1) or m.group(2) or m.group(3) or ""
            if value:
                anchors.add(value)
    return frozenset(anchors)


def is_anchor_fragment(fragment: str) -> bool:
    """Whether a fragment names an element (and so can be missing)."""
    if not fragment or fragment.lower() == "top":
        return False
    return not fragment.startswith((":~:", "!", "/"))


def has_anchor(anchors: frozenset[str], fragment: str) -> bool:
    return fragment in anchors or unquote(fragment) in anchors


class AnchorLedger:
    """Fragments linked, anchors found, and the fragments that are missing,
    in ``store`` (in memory without one); see the module docstring."""

    def __init__(self, max_referrers: int, store: RecordStore | None = None) -> None:
        self.max_referrers = max_referrers
        #: bumped whenever the missing anchors change (to know when to rewrite)
        self.version = 0
        self.open(records_or_memory(store))

    def open(self, store: RecordStore) -> None:
        """Keep the ledger in ``store`` from now on (what it holds is read)."""
        self._pages = store.records(NS_PAGES)
        self._targets = store.records(NS_TARGETS)
        self._referrers = store.records(NS_REFERRERS)
        self._totals = store.records(NS_TOTALS)
        #: kept in memory too: read after the crawl state closed
        self.missing_count = int(self._totals.get("missing") or 0)
        self.version += 1

    def clear(self) -> None:
        """Start empty (a new crawl on a state an earlier one finished)."""
        for records in (self._pages, self._targets, self._referrers, self._totals):
            records.clear()
        self.missing_count = 0
        self.version += 1

    def add_link(self, key: str, url: str, fragment: str, referrer: Referrer) -> None:
        if not is_anchor_fragment(fragment):
            return
        target = f"{key}\n{fragment}"
        found = self._targets.get(target)
        if found is None:
            anchors = self._pages.get(key)
            if anchors is None:
                state = _WANTED
            elif has_anchor(frozenset(anchors), fragment):
                state = _FOUND
            else:
                state = _MISSING
                self.missing_count = self._totals.incr("missing")
            self._targets.put(target, [url, state])
        else:
            state = found[1]
        if state == _FOUND:
            return
        ref_url, text, tag = referrer
        new = self._referrers.put_new(f"{target}\n{ref_url}", [text, tag])
        if new and state == _MISSING:
            self.version += 1

    def page_fetched(self, key: str, anchors: frozenset[str]) -> None:
        self._pages.put(key, sorted(anchors))
        decided = []
        for target, (url, state) in self._targets.items(f"{key}\n"):
            if state != _WANTED:
                continue
            fragment = target[len(key) + 1 :]
            if has_anchor(anchors, fragment):
                decided.append((target, [url, _FOUND]))
                self._referrers.delete(
                    [k for k, _ in self._referrers.items(f"{target}\n")]
                )
            else:
                decided.append((target, [url, _MISSING]))
                self.missing_count = self._totals.incr("missing")
                self.version += 1
        if decided:
            self._targets.put_many(decided)

    def records(self, internal: bool = True) -> Iterator[dict[str, Any]]:
        """The missing anchors as broken-links.jsonl lines, in key order, each
        with its referring pages in URL order (at most ``max_referrers``)."""
        for target, (url, state) in self._targets.items():
            if state != _MISSING:
                continue
            fragment = target.partition("\n")[2]
            prefix = f"{target}\n"
            referrers = []
            count = 0
            for ref_key, (text, tag) in self._referrers.items(prefix):
                count += 1
                if count <= self.max_referrers:
                    referrers.append(
                        {"url": ref_key[len(prefix) :], "text": text, "tag": tag}
                    )
            yield {
                "url": f"{url}#{fragment}",
                "status": 200,
                "error": "missing_anchor",
                "detail": f"no element with id or name {fragment!r}",
                "internal": internal,
                "referrer_count": count,
                "referrers": referrers,
            }
