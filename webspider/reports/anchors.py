"""Links to a fragment (``page.html#section``) whose page has no such anchor.

An anchor is the value of an ``id`` attribute, or the ``name`` of an ``<a>``
(HTML's legacy named anchors); they are found with a regular expression over
the page's text rather than a second parse. Fragments that are not anchors
are never reported: the empty fragment and ``top`` (HTML scrolls to the top),
text fragments (``#:~:text=``) and script routes (``#!/path``, ``#/path``).

Off by default because it costs memory: the anchors of every HTML page are
kept (a frozenset per page) until the end of the crawl, since a link to a
page's fragment may come after the page was fetched.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from webspider.reports.links import Referrer

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
    """Fragments linked, anchors found, and the fragments that are missing."""

    def __init__(self, max_referrers: int) -> None:
        self.max_referrers = max_referrers
        #: page key → its anchors (HTML pages fetched so far)
        self._anchors: dict[str, frozenset[str]] = {}
        #: page key → fragment → (page URL, referrers, count), page not fetched yet
        self._wanted: dict[str, dict[str, list[Any]]] = {}
        #: (page key, fragment) → [URL, referrers, count]
        self._missing: dict[tuple[str, str], list[Any]] = {}
        self.version = 0

    def add_link(self, key: str, url: str, fragment: str, referrer: Referrer) -> None:
        if not is_anchor_fragment(fragment):
            return
        anchors = self._anchors.get(key)
        if anchors is not None:
            if not has_anchor(anchors, fragment):
                self._add(self._missing, (key, fragment), url, referrer)
                self.version += 1
            return
        self._add(self._wanted.setdefault(key, {}), fragment, url, referrer)

    def page_fetched(self, key: str, anchors: frozenset[str]) -> None:
        self._anchors[key] = anchors
        wanted = self._wanted.pop(key, None)
        if not wanted:
            return
        for fragment, (url, referrers, count) in wanted.items():
            if not has_anchor(anchors, fragment):
                self._missing[(key, fragment)] = [url, referrers, count]
                self.version += 1

    def _add(
        self, table: dict[Any, list[Any]], k: Any, url: str, ref: Referrer
    ) -> None:
        entry = table.get(k)
        if entry is None:
            entry = table[k] = [url, [], 0]
        entry[2] += 1
        if len(entry[1]) < self.max_referrers:
            entry[1].append(ref)

    @property
    def missing_count(self) -> int:
        return len(self._missing)

    def records(self, internal: bool = True) -> list[dict[str, Any]]:
        return [
            {
                "url": f"{url}#{fragment}",
                "status": 200,
                "error": "missing_anchor",
                "detail": f"no element with id or name {fragment!r}",
                "internal": internal,
                "referrer_count": count,
                "referrers": [
                    {"url": r_url, "text": text, "tag": tag}
                    for r_url, text, tag in referrers
                ],
            }
            for (_, fragment), (url, referrers, count) in self._missing.items()
        ]
