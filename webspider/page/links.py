"""Read an HTML page once and take from it everything the crawl needs.

One scan of the page's bytes (webspider.page.scan) gives the links
(with their kind and text), ``<base href>``, the title and the ``<meta>``
elements, and where each link value is; the spider, the page directives, the
reports and the mirror all read this one result instead of re-parsing.

Which elements give links is declared in LINK_RULES
(webspider.page.linkrules, re-exported here), the spider's link following
rules: a user changes what is followed there, in one place.
"""

from __future__ import annotations

import codecs
import contextlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from time import thread_time
from urllib.parse import urljoin

from webspider.page.encoding import ascii_compatible
from webspider.page.linkrules import (
    LINK_RULES,
    PAGE,
    REQUISITE,
    REQUISITE_RELS,
    LinkRule,
)
from webspider.page.scan import LIMIT_LINKS, LIMIT_TIME, Found, scan, scan_css
from webspider.page.spans import Span
from webspider.utils.url import canonical_url, is_fetchable
from webspider.utils.urljoin import UrlJoiner

__all__ = [
    "LIMIT_LINKS",
    "LIMIT_TIME",
    "LINK_RULES",
    "PAGE",
    "REQUISITE",
    "REQUISITE_RELS",
    "Link",
    "LinkRule",
    "ParsedPage",
    "extract_css",
    "extract_page",
    "refresh_url",
    "scannable",
]


def _no_text(pos: int) -> str:
    return ""


@dataclass(slots=True)
class Link:
    """One distinct link of a page (fragment split off)."""

    url: str
    kind: str
    tag: str
    text: str = ""
    #: rel="nofollow" on every element that gave this URL
    nofollow: bool = False
    fragment: str = ""
    #: fragment → link text of later elements linking other fragments of the
    #: URL (``#a`` … ``#b``), for the missing-anchor check; None when there
    #: are none. The text may be an offset in the page: ParsedPage.text()
    #: gives it (only that check needs these texts, and pages have many).
    more_fragments: dict[str, str | int] | None = None


@dataclass
class ParsedPage:
    """What one HTML page says, parsed once."""

    url: str
    base_url: str
    title: str | None
    links: list[Link]
    #: (name or http-equiv lower-cased, content) of each <meta>, in order;
    #: http-equiv names are prefixed "http-equiv:".
    metas: list[tuple[str, str]] = field(default_factory=list)
    #: non-http(s) links seen (mailto:, javascript:, …), counted only
    unsupported_links: int = 0
    #: (fragment, text) of links within the page itself (``href="#x"``),
    #: which are not links to follow, for the missing-anchor check (the
    #: text as in Link.more_fragments)
    local_fragments: list[tuple[str, str | int]] = field(default_factory=list)
    #: where each link value is in the page's bytes, for the mirror's
    #: rewriting (webspider.mirror.rewrite.rewrite_spans); None when the page
    #: cannot be rewritten in place (an encoding such as UTF-16)
    spans: list[Span] | None = None
    #: each link value as the page wrote it → the absolute URL it stands for
    #: (None: not a link to fetch), so the mirror does not join it again
    resolved: dict[str, str | None] = field(default_factory=dict)
    text_at: Callable[[int], str] = field(default=_no_text, repr=False)
    #: None, or the bound that cut the reading of the page short: LIMIT_LINKS
    #: (it has more links than the cap) or LIMIT_TIME (the parse budget ran
    #: out); ``links`` are those found until then
    limited: str | None = None
    #: the canonical URL of each link (see ``link_keys``), once asked, or
    #: as the page worker sent them
    keys: list[str] | None = field(default=None, repr=False)
    #: the SHA-256 (hex) of the bytes the page was read from, when the page
    #: worker worked it out on its core; None: not known
    content_hash: str | None = None

    def link_keys(self) -> list[str]:
        """The canonical URL of each of ``links``, in order: the key the
        crawl state, the reports and the mirror look each link up by, worked
        out once for all of them."""
        keys = self.keys
        if keys is None:
            keys = self.keys = [canonical_url(link.url) for link in self.links]
        return keys

    def text(self, text: str | int) -> str:
        """A fragment's link text (Link.more_fragments, local_fragments)."""
        return text if isinstance(text, str) else self.text_at(text)


_WS = " \t\n\r\f"
_REFRESH_RE = re.compile(
    r"^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)$", re.IGNORECASE | re.DOTALL
)


def refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh content="5; url=...">``."""
    match = _REFRESH_RE.match(content)
    if not match:
        return None
    url = match.group(1).strip().strip("'\"").strip()
    return url or None


class _Collector:
    """Accumulates the distinct links of one page, resolving each href once."""

    __slots__ = (
        "base",
        "by_url",
        "heads",
        "joined",
        "joiner",
        "local",
        "text_at",
        "unsupported",
    )

    def __init__(self, base: str, text_at: Callable[[int], str] = _no_text) -> None:
        self.base = base
        self.joiner = UrlJoiner(base)
        self.by_url: dict[str, Link] = {}
        #: each link value → its absolute URL (None: not one to fetch)
        self.joined: dict[str, str | None] = {}
        #: the same for values without their fragment: a page links many
        #: fragments of few URLs (``os.html#os.getcwd``, ``os.html#os.stat``)
        self.heads: dict[str, str | None] = {}
        self.unsupported = 0
        self.local: list[tuple[str, str | int]] = []
        #: the text of an <a> from where its content starts (taken only
        #: for the links that keep it: most are repeats)
        self.text_at = text_at

    def add(
        self,
        href: str,
        kind: str,
        tag: str,
        text: str | int = "",
        nofollow: bool = False,
    ) -> None:
        """One link (a meta refresh's, a stylesheet's): add_all's steps."""
        self.add_all(((href, kind, tag, text, nofollow),))

    def add_all(self, found: Iterable[Found]) -> None:
        """Each of a scan's links, in one loop (a page has thousands:
        python3.11-doc 164,000 <a>; a call each cost a third of the links'
        time)."""
        joined, by_url, local = self.joined, self.by_url, self.local
        for href, kind, tag, text, nofollow in found:
            absolute = joined.get(href, "")
            if absolute == "":
                absolute = joined[href] = self._resolve(href)
            if absolute is None:
                if (
                    kind == PAGE
                    and href.lstrip(_WS)[:1] == "#"
                    and len(href.strip(_WS)) > 1
                ):
                    local.append((href.strip(_WS)[1:], text))
                continue
            url, _, fragment = absolute.partition("#")
            link = by_url.get(url)
            if link is None:
                by_url[url] = Link(url, kind, tag, self._text(text), nofollow, fragment)
                continue
            # A URL that is a page link anywhere on the page is a page link.
            if kind == PAGE and link.kind != PAGE:
                link.kind = PAGE
            if link.nofollow and not nofollow:
                link.nofollow = False
            if not link.text and text:
                link.text = self._text(text)
            if fragment and fragment != link.fragment:
                if link.more_fragments is None:
                    link.more_fragments = {fragment: text}
                else:
                    link.more_fragments.setdefault(fragment, text)

    def _text(self, text: str | int) -> str:
        return text if isinstance(text, str) else self.text_at(text)

    def _resolve(self, href: str) -> str | None:
        href = href.strip(_WS)
        if "\n" in href or "\t" in href or "\r" in href:
            href = href.replace("\n", "").replace("\t", "").replace("\r", "")
        if not href or href.startswith("#"):
            return None
        # urljoin splits a fragment off first and puts it back unchanged, so
        # the join of what comes before it serves every fragment of that URL
        # (an empty fragment is dropped or kept by scheme: joined whole).
        head, _, fragment = href.partition("#")
        if not fragment:
            head = href
        absolute = self.heads.get(head, "")
        if absolute == "":
            absolute = self.heads[head] = self._join(head)
        if absolute is None:
            self.unsupported += 1
            return None
        return absolute + "#" + fragment if fragment else absolute

    def _join(self, href: str) -> str | None:
        try:
            absolute = self.joiner.join(href)
        except ValueError:  # e.g. an invalid IPv6 literal
            return None
        return absolute if is_fetchable(absolute) else None


def scannable(body: bytes, encoding: str | None) -> tuple[bytes, str, bool]:
    """``body`` and its encoding as the scan reads them, and whether they are
    the bytes received: a page in an encoding that is not ASCII-compatible
    (UTF-16 and the like) is scanned as UTF-8, and kept as it is."""
    try:
        name = codecs.lookup(encoding).name if encoding else "utf-8"
    except LookupError:
        name = "utf-8"
    if ascii_compatible(name):
        return body, name, True
    return body.decode(name, "replace").encode("utf-8"), "utf-8", False


#: the parse budget is looked at after joining this many more links
_JOIN_CHECK_EVERY = 1024


def _deadline(budget: float | None) -> float | None:
    return None if budget is None or budget <= 0 else thread_time() + budget


def extract_page(
    body: bytes,
    url: str,
    encoding: str | None = None,
    rules: tuple[LinkRule, ...] = LINK_RULES,
    *,
    max_links: int | None = None,
    budget: float | None = None,
) -> ParsedPage:
    """Scan ``body`` (the HTML of ``url``) and collect what the crawl needs:
    at most ``max_links`` links, within ``budget`` seconds of this thread's
    CPU time for the scan and the joining of links together (None: no
    bound; ParsedPage.limited says which bound bit)."""
    deadline = _deadline(budget)
    body, encoding, in_place = scannable(body, encoding)
    found = scan(body, encoding, rules, max_links=max_links, deadline=deadline)

    base_url = url
    if found.base_href is not None:
        with contextlib.suppress(ValueError):
            base_url = urljoin(url, found.base_href.strip(_WS))
    collector = _Collector(base_url, found.text_at)
    add = collector.add
    limited = found.limited
    links = found.links
    if deadline is None or len(links) <= _JOIN_CHECK_EVERY:
        collector.add_all(links)
    else:
        for start in range(0, len(links), _JOIN_CHECK_EVERY):
            end = start + _JOIN_CHECK_EVERY
            collector.add_all(links[start:end])
            if end < len(links) and thread_time() > deadline:
                limited = LIMIT_TIME
                break
    if limited != LIMIT_TIME:
        for content in found.refresh:
            target = refresh_url(content)
            if target:
                add(target, PAGE, "meta")
    return ParsedPage(
        url=url,
        base_url=base_url,
        title=found.title,
        links=list(collector.by_url.values()),
        metas=found.metas,
        unsupported_links=collector.unsupported,
        local_fragments=collector.local,
        spans=found.spans if in_place else None,
        resolved=collector.joined,
        text_at=found.text_at,
        limited=limited,
    )


def extract_css(
    body: bytes,
    url: str,
    encoding: str | None = None,
    *,
    max_links: int | None = None,
) -> ParsedPage:
    """The links of a stylesheet (relative to the stylesheet's own URL):
    ``url(...)`` and ``@import``, comments skipped, read by the same scan as
    CSS in pages; at most ``max_links``."""
    body, encoding, _ = scannable(body, encoding)
    found = scan_css(body, encoding, max_links)
    collector = _Collector(url)
    collector.add_all(
        (value, REQUISITE, "css", "", False) for _, _, value, _ in found.spans
    )
    return ParsedPage(
        url=url,
        base_url=url,
        title=None,
        links=list(collector.by_url.values()),
        unsupported_links=collector.unsupported,
        limited=found.limited,
    )
