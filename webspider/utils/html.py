"""Parse an HTML page once and take from it everything the crawl needs.

One lxml tree per page gives the links (with their kind and text), ``<base
href>``, the title and the ``<meta>`` elements; the spider, the page
directives and the reports all read this one result instead of re-parsing.

Which elements give links is declared in LINK_RULES, the spider's link
following rules: a user changes what is followed there, in one place.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from lxml import etree

from webspider.utils.css import css_urls
from webspider.utils.url import is_fetchable
from webspider.utils.urljoin import UrlJoiner

if TYPE_CHECKING:
    pass

#: A link to another page: followed, and counted against the depth limit.
PAGE = "page"
#: Something a page needs to display (image, stylesheet, script, frame…):
#: it belongs to the page, as with wget --page-requisites.
REQUISITE = "requisite"


@dataclass(frozen=True)
class LinkRule:
    """Links come from attribute ``attr`` of elements ``tag``."""

    tag: str
    attr: str
    kind: str = REQUISITE
    #: the attribute holds a srcset-style list of "URL descriptor" candidates
    srcset: bool = False


LINK_RULES: tuple[LinkRule, ...] = (
    LinkRule("a", "href", PAGE),
    LinkRule("area", "href", PAGE),
    LinkRule("link", "href", PAGE),  # kind refined by rel, see _link_kind
    LinkRule("img", "src"),
    LinkRule("img", "srcset", srcset=True),
    LinkRule("script", "src"),
    LinkRule("iframe", "src"),
    LinkRule("frame", "src"),
    LinkRule("source", "src"),
    LinkRule("source", "srcset", srcset=True),
    LinkRule("video", "src"),
    LinkRule("video", "poster"),
    LinkRule("audio", "src"),
    LinkRule("track", "src"),
    LinkRule("embed", "src"),
    LinkRule("input", "src"),  # only type=image has a src that loads
    LinkRule("object", "data"),
)

#: rel values of <link> that make it something the page needs, not a page.
REQUISITE_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "shortcut",
        "apple-touch-icon",
        "preload",
        "modulepreload",
        "manifest",
        "mask-icon",
        "prefetch",
    }
)


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
    #: (fragment, text) of later elements linking other fragments of the URL
    #: (``#a`` … ``#b``), for the missing-anchor check; None when there are none
    more_fragments: list[tuple[str, str]] | None = None


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
    root: etree._Element | None = None
    #: (fragment, text) of links within the page itself (``href="#x"``),
    #: which are not links to follow, for the missing-anchor check
    local_fragments: list[tuple[str, str]] = field(default_factory=list)


_WS = " \t\n\r\f"
_SRCSET_RE = re.compile(r"\s*([^\s,][^\s]*?)(?:\s+[^,]*)?(?:,|$)")
_SPACE_RE = re.compile(r"\s+")
_REFRESH_RE = re.compile(
    r"^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)$", re.IGNORECASE | re.DOTALL
)


def srcset_urls(value: str) -> list[str]:
    """URLs of a ``srcset`` attribute (candidates separated by commas)."""
    return [m.group(1).rstrip(",") for m in _SRCSET_RE.finditer(value) if m.group(1)]


def refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh content="5; url=...">``."""
    match = _REFRESH_RE.match(content)
    if not match:
        return None
    url = match.group(1).strip().strip("'\"").strip()
    return url or None


def _make_parser(encoding: str | None) -> etree.HTMLParser:
    return etree.HTMLParser(
        encoding=encoding,
        recover=True,
        no_network=True,
        huge_tree=False,
        remove_blank_text=False,
        remove_comments=False,
        collect_ids=False,
    )


_PARSERS: dict[str | None, etree.HTMLParser] = {}


def parse_html_tree(body: bytes, encoding: str | None) -> etree._Element | None:
    """lxml tree of an HTML body, or None when there is nothing to parse."""
    parser = _PARSERS.get(encoding)
    if parser is None:
        try:
            parser = _make_parser(encoding)
        except LookupError:
            parser = _make_parser(None)
        _PARSERS[encoding] = parser
    try:
        return etree.fromstring(body, parser)
    except (etree.ParserError, ValueError):
        return None


class _Collector:
    """Accumulates the distinct links of one page, resolving each href once."""

    __slots__ = ("base", "by_url", "joined", "joiner", "local", "unsupported")

    def __init__(self, base: str) -> None:
        self.base = base
        self.joiner = UrlJoiner(base)
        self.by_url: dict[str, Link] = {}
        self.joined: dict[str, str | None] = {}
        self.unsupported = 0
        self.local: list[tuple[str, str]] = []

    def add(
        self, href: str, kind: str, tag: str, text: str = "", nofollow: bool = False
    ) -> None:
        absolute = self.joined.get(href, "")
        if absolute == "":
            absolute = self._resolve(href)
            self.joined[href] = absolute
        if absolute is None:
            if (
                kind == PAGE
                and href.lstrip(_WS)[:1] == "#"
                and len(href.strip(_WS)) > 1
            ):
                self.local.append((href.strip(_WS)[1:], text))
            return
        url, _, fragment = absolute.partition("#")
        link = self.by_url.get(url)
        if link is None:
            self.by_url[url] = Link(url, kind, tag, text, nofollow, fragment)
            return
        # A URL that is a page link anywhere on the page is a page link.
        if kind == PAGE and link.kind != PAGE:
            link.kind = PAGE
        if link.nofollow and not nofollow:
            link.nofollow = False
        if not link.text and text:
            link.text = text
        if fragment and fragment != link.fragment:
            if link.more_fragments is None:
                link.more_fragments = [(fragment, text)]
            elif (fragment, text) not in link.more_fragments:
                link.more_fragments.append((fragment, text))

    def _resolve(self, href: str) -> str | None:
        href = href.strip(_WS)
        if "\n" in href or "\t" in href or "\r" in href:
            href = href.replace("\n", "").replace("\t", "").replace("\r", "")
        if not href or href.startswith("#"):
            return None
        try:
            absolute = self.joiner.join(href)
        except ValueError:  # e.g. an invalid IPv6 literal
            self.unsupported += 1
            return None
        if not is_fetchable(absolute):
            self.unsupported += 1
            return None
        return absolute


def _text(el: etree._Element) -> str:
    # most links hold only text: no itertext walk for them
    text = (el.text or "") if len(el) == 0 else "".join(el.itertext())
    # str.split() and the regex's \s are both str.isspace()
    return " ".join(text.split())[:200] if text else ""


def _link_kind(el: etree._Element) -> str:
    rel = (el.get("rel") or "").lower().split()
    return REQUISITE if REQUISITE_RELS.intersection(rel) else PAGE


def extract_page(
    body: bytes,
    url: str,
    encoding: str | None = None,
    rules: tuple[LinkRule, ...] = LINK_RULES,
    keep_tree: bool = False,
) -> ParsedPage:
    """Parse ``body`` (the HTML of ``url``) and collect what the crawl needs."""
    root = parse_html_tree(body, encoding)
    if root is None:
        return ParsedPage(url=url, base_url=url, title=None, links=[])
    by_tag = _rules_by_tag(tuple(rules))

    base_url = url
    title: str | None = None
    metas: list[tuple[str, str]] = []
    for el in root.iter("base", "title", "meta"):
        tag = el.tag
        if tag == "base":
            href = el.get("href")
            if href and base_url is url:
                with contextlib.suppress(ValueError):
                    base_url = urljoin(url, href.strip(_WS))
        elif tag == "title":
            if title is None:
                title = _SPACE_RE.sub(" ", "".join(el.itertext())).strip()
        else:
            content = el.get("content")
            if content is None:
                continue
            name = el.get("name")
            if name:
                metas.append((name.strip().lower(), content))
            else:
                equiv = el.get("http-equiv")
                if equiv:
                    metas.append(("http-equiv:" + equiv.strip().lower(), content))
                    if equiv.strip().lower() == "refresh" and not _in_noscript(el):
                        metas.append(("refresh-url", refresh_url(content) or ""))

    collector = _Collector(base_url)
    add = collector.add
    for el in root.iter(*by_tag, "style"):
        tag = el.tag
        if tag == "style":
            if el.text:
                for css_url in css_urls(el.text):
                    add(css_url, REQUISITE, "style")
            if "style" not in by_tag:
                continue
        for rule in by_tag.get(tag, ()):
            value = el.get(rule.attr)
            if not value:
                continue
            if rule.srcset:
                for candidate in srcset_urls(value):
                    add(candidate, rule.kind, tag)
                continue
            if tag == "input" and (el.get("type") or "").lower() != "image":
                continue
            kind = _link_kind(el) if tag == "link" else rule.kind
            if tag in ("a", "area"):
                rel = el.get("rel")
                nofollow = bool(rel) and "nofollow" in rel.lower().split()
                text = _text(el) if tag == "a" else (el.get("alt") or "")
                add(value, kind, tag, text, nofollow)
            elif tag == "img":
                add(value, kind, tag, el.get("alt") or "")
            else:
                add(value, kind, tag)
    for value in root.xpath("//@style"):
        if "url(" in value.lower():
            for css_url in css_urls(value):
                add(css_url, REQUISITE, "style")
    for name, content in metas:
        if name == "refresh-url" and content:
            add(content, PAGE, "meta")

    return ParsedPage(
        url=url,
        base_url=base_url,
        title=title,
        links=list(collector.by_url.values()),
        metas=[m for m in metas if m[0] != "refresh-url"],
        unsupported_links=collector.unsupported,
        root=root if keep_tree else None,
        local_fragments=collector.local,
    )


@lru_cache(maxsize=16)
def _rules_by_tag(rules: tuple[LinkRule, ...]) -> dict[str, list[LinkRule]]:
    """The rules grouped by element, worked out once per rule set (not per page)."""
    by_tag: dict[str, list[LinkRule]] = {}
    for rule in rules:
        by_tag.setdefault(rule.tag, []).append(rule)
    return by_tag


def _in_noscript(el: etree._Element) -> bool:
    return any(True for _ in el.iterancestors("noscript"))


def extract_css(text: str, url: str) -> ParsedPage:
    """The links of a stylesheet (relative to the stylesheet's own URL)."""
    collector = _Collector(url)
    for css_url in css_urls(text):
        collector.add(css_url, REQUISITE, "css")
    return ParsedPage(
        url=url,
        base_url=url,
        title=None,
        links=list(collector.by_url.values()),
        unsupported_links=collector.unsupported,
    )
