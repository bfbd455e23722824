"""One pass over the bytes of an HTML page: every link value, and where it is.

This is how wget and HTTrack read pages, and not how a DOM parser does: a
tolerant tokenizer jumps from one start tag that matters to the next (the
elements of the link rules, ``<base>``, ``<meta>``, ``<title>``, and any tag
with a ``style`` attribute), reads their attributes, and skips comments and
raw text (``<script>``, ``<style>``, ``<textarea>``, ``<title>``…). For each
link value it records the text the page wrote (character references undone)
and its byte span. The spider takes the page's links from the scan
(webspider.page.links), and the mirror rewrites the same spans
(webspider.mirror.rewrite): a page is read once, and the links rewritten are
exactly the links followed.

Nothing here builds a tree, so nothing has a depth limit (libxml2 gives up
on 10,000 nested ``<div>``), and the scan is linear in the page's size. It
reads ASCII-compatible encodings in place (``<``, ``=`` and quotes are single
bytes there); webspider.page.links re-encodes other pages (UTF-16, UTF-32)
to UTF-8 first.

What one page may cost is bounded: the scan stops collecting once it holds
``max_links`` links (the rest of the page is not read), and stops reading
once its thread has spent ``budget`` seconds of CPU on the page; either way
``HtmlScan.limited`` says which bound bit, and what was found before stays.

This module walks the page and takes the links (``_Scanner``); beside it,
the tags' tokenizer and the rules' regexes (webspider.page.tags), the spans
it records (webspider.page.spans), character references
(webspider.page.charrefs), an ``<a>``'s text read later
(webspider.page.linktext), and whether an encoding is read in place
(webspider.page.encoding.ascii_compatible).
"""

from __future__ import annotations

import heapq
import html
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import partial
from time import thread_time
from typing import TYPE_CHECKING

from webspider.page.charrefs import unescape_attribute
from webspider.page.linkrules import REQUISITE, LinkRule, link_kind
from webspider.page.linktext import link_text
from webspider.page.spans import BASE, ESCAPED, Span
from webspider.page.tags import QUOTES, RAW_TEXT, RuleTable, attributes, rule_table

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

#: HtmlScan.limited: the link cap bit, or the time budget did
LIMIT_LINKS = "links"
LIMIT_TIME = "time"
#: the bounds are looked at each time the scan has read this many more bytes
#: (a compare per tag in between: the check itself costs a clock reading)
_CHECK_EVERY = 64 * 1024

#: One link in page order: (value, kind, tag, text, nofollow). ``kind`` is
#: PAGE or REQUISITE (webspider.page.linkrules); ``text`` is the link text,
#: or for an ``<a>`` the offset where its content starts (see
#: HtmlScan.text_at: most links never need their text).
Found = tuple[str, str, str, "str | int", bool]

_NOSCRIPT_RE = re.compile(rb"<noscript")
_NOSCRIPT_END_RE = re.compile(rb"</noscript")
_CLOSE_RE = {t: re.compile(rb"</" + t + rb"[\s/>]", re.IGNORECASE) for t in RAW_TEXT}

_CSS_URL_RE = re.compile(
    rb"""url\(\s*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'()]+))\s*\)""", re.IGNORECASE
)
_CSS_IMPORT_RE = re.compile(
    rb"""@import\s+(?:"([^"\n]*)"|'([^'\n]*)')""", re.IGNORECASE
)
_CSS_COMMENT_RE = re.compile(rb"/\*.*?(?:\*/|$)", re.DOTALL)
_QUOTE_REFS = (b"&quot;", b"&#34;", b"&#x22;", b"&#39;", b"&#x27;", b"&apos;")


@dataclass
class HtmlScan:
    """What one pass over a page found."""

    #: every link value, in page order (see Span)
    spans: list[Span] = field(default_factory=list)
    #: every link, in page order (see Found)
    links: list[Found] = field(default_factory=list)
    #: the first ``<base href>``
    base_href: str | None = None
    #: the first ``<title>``, whitespace collapsed
    title: str | None = None
    #: (name or "http-equiv:" + http-equiv, lower-cased; content) of each <meta>
    metas: list[tuple[str, str]] = field(default_factory=list)
    #: the URLs of ``<meta http-equiv=refresh>`` outside ``<noscript>``
    refresh: list[str] = field(default_factory=list)
    text_at: Callable[[int], str] = field(default=lambda pos: "", repr=False)
    #: None, or the bound that stopped the scan (LIMIT_LINKS, LIMIT_TIME)
    limited: str | None = None


class _Scanner:
    __slots__ = (
        "body",
        "deadline",
        "encoding",
        "fast",
        "low",
        "max_links",
        "noscripts",
        "result",
        "spans",
        "table",
    )

    def __init__(
        self,
        body: bytes,
        encoding: str,
        table: RuleTable,
        fast: bool,
        *,
        max_links: int | None = None,
        deadline: float | None = None,
    ) -> None:
        self.body = body
        self.low = body.lower()  # ASCII case folding: same length, same offsets
        self.encoding = encoding
        self.table = table
        self.fast = fast
        self.result = HtmlScan(text_at=partial(link_text, body, encoding))
        self.spans = self.result.spans
        #: where each "<noscript" and "</noscript" starts (see in_noscript)
        self.noscripts: tuple[list[int], list[int]] | None = None
        self.max_links = max_links
        #: thread_time() past which the scan stops
        self.deadline = deadline

    # -- bounds -------------------------------------------------------------------
    def over(self) -> bool:
        """Whether a bound is reached (and then which, in result.limited)."""
        result = self.result
        if (
            self.max_links is not None
            and len(result.links) + len(result.refresh) >= self.max_links
        ):
            result.limited = LIMIT_LINKS
        elif self.deadline is not None and thread_time() > self.deadline:
            result.limited = LIMIT_TIME
        return result.limited is not None

    def trim(self) -> None:
        """At most max_links links: the checks run every _CHECK_EVERY bytes,
        so the last stretch read may have found more (their spans stay: the
        mirror may rewrite a few links the crawl does not follow, never the
        other way round)."""
        result, cap = self.result, self.max_links
        if cap is None:
            return
        del result.links[cap:]
        del result.refresh[max(0, cap - len(result.links)) :]

    # -- values -------------------------------------------------------------------
    def text(self, start: int, end: int) -> str:
        return self.body[start:end].decode(self.encoding, "replace")

    def attr(self, start: int, end: int) -> str:
        return unescape_attribute(self.text(start, end))

    # -- the scan -----------------------------------------------------------------
    def run(self) -> HtmlScan:
        body, low = self.body, self.low
        anchor = self.table.anchor if self.fast else None
        # with anchor: group 1 "a", 6 another element; else 1 the element
        other = 6 if self.table.anchor is not None else 1
        size = len(body)
        style = low.find(b"style")
        pos = 0
        bounded = self.max_links is not None or self.deadline is not None
        checkpoint = _CHECK_EVERY if bounded else size + 1
        # A plain <a> is most tags of most pages (164,000 of python3.11-doc's
        # 191,000 stops): its link is taken here, in the loop, with what it
        # needs bound to locals (a method call and its lookups a tag were a
        # third of the scan's time).
        add_span, add_link = self.spans.append, self.result.links.append
        encoding = self.encoding
        kind, element = (anchor.kind, anchor.tag) if anchor is not None else ("", "")
        # search (not finditer) from where the last tag, comment or raw text
        # ended: matches inside them would be tried for nothing, and a tag
        # that never closes would make that quadratic
        search = self.table.master.search
        while (tag := search(low, pos)) is not None:
            at = tag.start()
            if at >= checkpoint:
                if self.over():
                    break
                checkpoint = at + _CHECK_EVERY
            if 0 <= style < at:
                style, pos = self.styles(style, pos, at)
                if at < pos:
                    continue
            regs = tag.regs
            if regs[1][0] >= 0 and other == 6:
                end = regs[0][1]
                if (
                    anchor is not None
                    and regs[5][0] >= 0
                    and regs[4][0] < 0
                    and (regs[2][0] < 0 or low.count(b"href", at, end) == 1)
                    and (regs[3][0] < 0 or low.count(b"rel", at, end) == 1)
                ):
                    # a plain <a> without a style (see RuleTable.anchor): its href
                    start, stop = regs[2]
                    if stop > start and low[start] in QUOTES:
                        start, stop = start + 1, stop - 1
                    if stop > start:
                        value = body[start:stop].decode(encoding, "replace")
                        if "&" in value:
                            value = unescape_attribute(value)
                        add_span((start, stop, value, ESCAPED))
                        rel_start, rel_end = regs[3]
                        nofollow = rel_start >= 0 and self.rel_nofollow(
                            rel_start, rel_end
                        )
                        add_link((value, kind, element, end, nofollow))
                    pos = end  # past ``at``: a tag is at least "<a>"
                    continue
                pos = self.tag(at, b"a")  # a style, maybe a repeated attribute…
            elif regs[other][0] >= 0:
                pos = self.tag(at, tag.group(other))
            elif low.startswith((b"<!-->", b"<!--->"), at):  # empty comments
                pos = at + (5 if low[at + 4] == ord(">") else 6)
            else:  # a comment
                close = body.find(b"-->", at + 4)
                pos = size if close < 0 else close + 3
            if pos <= at:
                pos = at + 1
        else:
            if style >= 0:
                self.styles(style, pos, size)
            cap = self.max_links
            result = self.result
            if cap is not None and len(result.links) + len(result.refresh) > cap:
                result.limited = LIMIT_LINKS  # found in the last stretch
        if self.result.limited is not None:
            self.trim()
        return self.result

    def styles(self, style: int, pos: int, stop: int) -> tuple[int, int]:
        """Read the tags before ``stop`` that hold a "style" (the first at
        ``style``), from ``pos`` on: an attribute of any tag may hold url().
        Returns the next "style" and where the scan goes on."""
        body, low = self.body, self.low
        while 0 <= style < stop:
            if style >= pos:
                lt = body.rfind(b"<", pos, style)
                end = self.tag(lt) if lt >= 0 else style
                pos = max(end, style + 5)
            style = low.find(b"style", pos)
        return style, pos

    def rel_nofollow(self, start: int, end: int) -> bool:
        """Whether the rel value at ``low[start:end]`` (quotes included)
        says nofollow."""
        low = self.low
        if b"nofollow" not in low[start:end]:
            return False
        if low[start] in QUOTES:
            start, end = start + 1, end - 1
        return "nofollow" in self.attr(start, end).lower().split()

    def tag(self, lt: int, name: bytes | None = None) -> int:
        """Take what the start tag at ``lt`` holds; returns where the scan goes
        on (after its raw text, for script/style/…)."""
        found = attributes(self.low, lt, self.table, name, self.fast)
        if found is None:
            return lt + 1
        name, attrs, end = found
        if attrs:
            spans = self.spans
            first = len(spans)
            style = attrs.get(b"style")
            if style is not None:
                self.css(style[0], style[1], escaped=True)
            pairs = self.table.by_tag.get(name)
            if pairs is not None:
                self.links(name, attrs, pairs, end)
            elif name == b"base":
                self.base(attrs)
            elif name == b"meta":
                self.meta(attrs, lt)
            if len(spans) - first > 1:  # in page order, whatever the rules' order
                spans[first:] = sorted(spans[first:])
        if name in RAW_TEXT and self.body[end - 2 : end] != b"/>":
            return self.raw_text(name, end)
        return end

    def links(
        self,
        name: bytes,
        attrs: dict[bytes, tuple[int, int]],
        pairs: tuple[tuple[bytes, LinkRule], ...],
        end: int,
    ) -> None:
        spans, found = self.spans, self.result.links
        for attr, rule in pairs:
            span = attrs.get(attr)
            if span is None or span[1] <= span[0]:
                continue
            start, stop = span
            if rule.srcset:
                self.srcset(start, stop, rule)
                continue
            if name == b"input" and self.value_of(attrs, b"type").lower() != "image":
                continue
            value = self.attr(start, stop)
            spans.append((start, stop, value, ESCAPED))
            tag, kind = rule.tag, rule.kind
            if name == b"a":
                found.append((value, kind, tag, end, self.nofollow(attrs)))
            elif name == b"area":
                alt = self.value_of(attrs, b"alt")
                found.append((value, kind, tag, alt, self.nofollow(attrs)))
            elif name == b"img":
                found.append((value, kind, tag, self.value_of(attrs, b"alt"), False))
            elif name == b"link":
                kind = link_kind(rule, self.value_of(attrs, b"rel"))
                found.append((value, kind, tag, "", False))
            else:
                found.append((value, kind, tag, "", False))

    def value_of(self, attrs: dict[bytes, tuple[int, int]], name: bytes) -> str:
        span = attrs.get(name)
        return self.attr(*span) if span is not None else ""

    def nofollow(self, attrs: dict[bytes, tuple[int, int]]) -> bool:
        span = attrs.get(b"rel")
        if span is None:
            return False
        return "nofollow" in self.attr(*span).lower().split()

    def srcset(self, start: int, end: int, rule: LinkRule) -> None:
        # HTML's srcset grammar: candidates "URL [descriptor]" split by commas.
        body, spans, found = self.body, self.spans, self.result.links
        pos = start
        while pos < end:
            while pos < end and body[pos] in b" \t\n\r\f,":
                pos += 1
            url_start = pos
            while pos < end and body[pos] not in b" \t\n\r\f":
                pos += 1
            url_end = pos
            while url_end > url_start and body[url_end - 1] == ord(","):
                url_end -= 1
            if url_end > url_start:
                if self.max_links is not None and len(found) >= self.max_links:
                    self.result.limited = LIMIT_LINKS
                    return
                value = self.attr(url_start, url_end)
                spans.append((url_start, url_end, value, ESCAPED))
                found.append((value, rule.kind, rule.tag, "", False))
            if url_end == pos:  # no trailing comma: skip the descriptors
                while pos < end and body[pos] != ord(","):
                    pos += 1

    def css(self, start: int, end: int, escaped: bool) -> None:
        """The URLs of CSS at ``body[start:end]`` (a style attribute, when
        ``escaped``, or a ``<style>`` element). Matches are taken as they
        come (a stylesheet may hold millions: see max_links)."""
        chunk = self.body[start:end]
        matches: Iterator[re.Match[bytes]] = _CSS_URL_RE.finditer(chunk)
        if b"@import" in chunk.lower():
            imports = _CSS_IMPORT_RE.finditer(chunk)
            matches = heapq.merge(matches, imports, key=_match_start)
        comments = _CSS_COMMENT_RE.finditer(chunk) if b"/*" in chunk else iter(())
        upcoming = next(comments, None)
        #: where the last comment starting at or before a match ends
        comment_end = -1
        flags = ESCAPED if escaped else 0
        spans, found, cap = self.spans, self.result.links, self.max_links
        for match in matches:
            at = match.start()
            while upcoming is not None and upcoming.start() <= at:
                comment_end = upcoming.end()
                upcoming = next(comments, None)
            if at < comment_end:
                continue
            group = match.lastindex
            if group is None:
                continue
            if cap is not None and len(found) >= cap:
                self.result.limited = LIMIT_LINKS
                return
            a, b = match.span(group)
            if escaped and group == 3:
                a, b = _strip_quote_refs(chunk, a, b)
            value = (self.attr if escaped else self.text)(start + a, start + b)
            spans.append((start + a, start + b, value, flags))
            found.append((value, REQUISITE, "style", "", False))

    def base(self, attrs: dict[bytes, tuple[int, int]]) -> None:
        span = attrs.get(b"href")
        if span is None or span[1] <= span[0]:
            return
        value = self.attr(*span)
        self.spans.append((span[0], span[1], value, BASE | ESCAPED))
        if self.result.base_href is None:
            self.result.base_href = value

    def meta(self, attrs: dict[bytes, tuple[int, int]], lt: int) -> None:
        content = attrs.get(b"content")
        if content is None:
            return
        metas = self.result.metas
        name = self.value_of(attrs, b"name").strip()
        if name:
            metas.append((name.lower(), self.attr(*content)))
            return
        equiv = self.value_of(attrs, b"http-equiv").strip().lower()
        if equiv:
            value = self.attr(*content)
            metas.append(("http-equiv:" + equiv, value))
            if equiv == "refresh" and not self.in_noscript(lt):
                self.result.refresh.append(value)

    def in_noscript(self, pos: int) -> bool:
        """Whether the last ``<noscript`` before ``pos`` is after the last
        ``</noscript``. Both are listed once per page, on the first refresh:
        looking back over the page from each one made a page of many meta
        refreshes quadratic."""
        if self.noscripts is None:
            low = self.low
            self.noscripts = (
                [m.start() for m in _NOSCRIPT_RE.finditer(low)],
                [m.start() for m in _NOSCRIPT_END_RE.finditer(low)],
            )
        opens, closes = self.noscripts
        # as rfind(..., 0, pos): the last one that ends by pos
        i = bisect_right(opens, pos - len(b"<noscript"))
        j = bisect_right(closes, pos - len(b"</noscript"))
        return (opens[i - 1] if i else -1) > (closes[j - 1] if j else -1)

    def raw_text(self, name: bytes, pos: int) -> int:
        close_match = _CLOSE_RE[name].search(self.body, pos)
        text_end = len(self.body) if close_match is None else close_match.start()
        if name == b"style":
            self.css(pos, text_end, escaped=False)
        elif name == b"title" and self.result.title is None:
            title = html.unescape(self.text(pos, text_end))
            self.result.title = " ".join(title.split())
        return text_end


def _match_start(match: re.Match[bytes]) -> int:
    return match.start()


def _strip_quote_refs(chunk: bytes, start: int, end: int) -> tuple[int, int]:
    """``url(&quot;x&quot;)`` in a style attribute: the quotes are
    character references; the URL is between them."""
    for ref in _QUOTE_REFS:
        if (
            end - start >= 2 * len(ref)
            and chunk.startswith(ref, start)
            and chunk.endswith(ref, start, end)
        ):
            return start + len(ref), end - len(ref)
    return start, end


def scan(
    body: bytes,
    encoding: str,
    rules: Iterable[LinkRule],
    *,
    fast: bool = True,
    max_links: int | None = None,
    deadline: float | None = None,
) -> HtmlScan:
    """Scan an HTML page (``encoding`` must be ASCII-compatible).
    ``fast=False`` reads every tag with the plain attribute loop (tests
    compare both). At most ``max_links`` links are collected; the scan stops
    when ``time.thread_time()`` passes ``deadline`` (None: no bound)."""
    table = rule_table(tuple(rules))
    return _Scanner(
        body, encoding, table, fast, max_links=max_links, deadline=deadline
    ).run()


def scan_css(body: bytes, encoding: str, max_links: int | None = None) -> HtmlScan:
    """The URLs of a stylesheet (at most ``max_links``), with their spans."""
    scanner = _Scanner(body, encoding, rule_table(()), True, max_links=max_links)
    scanner.css(0, len(body), escaped=False)
    return scanner.result
