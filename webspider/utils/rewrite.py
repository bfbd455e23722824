"""Rewrite the links of an HTML page or a stylesheet, touching nothing else.

A byte-level scan (not a parse and re-serialisation): it finds the spans of
link attribute values (the elements and attributes of
webspider.utils.html.LINK_RULES, plus ``<base href>``), of ``srcset``
candidates, and of ``url(...)``/``@import`` in ``<style>``, ``style=""`` and
stylesheets, asks ``resolve`` what each should become, and splices the
answers in. Every byte outside a replaced span is kept, so the text is never
re-encoded, and a page the scan does not understand is left as it was.

``resolve(url, kind)`` gets the link as the page wrote it (HTML character
references undone) and ``kind`` — ``"base"`` for ``<base href>``, ``"link"``
otherwise — and returns the new value or None to keep the old one. Returned
values are escaped for where they go (``&`` → ``&amp;`` in HTML).

Only ASCII-compatible encodings are rewritten (UTF-16 pages are kept as they
are: splicing ASCII into them would corrupt them).
"""

from __future__ import annotations

import codecs
import html
import re
from collections.abc import Callable, Iterable

from webspider.utils.html import LINK_RULES, LinkRule

Resolve = Callable[[str, str], "str | None"]
Edit = tuple[int, int, bytes]

_TAG_RE = re.compile(rb"<([A-Za-z][A-Za-z0-9:_-]*)")
_SPACE_RE = re.compile(rb"[\s/]*")
_NAME_RE = re.compile(rb"[^\s/>=][^\s/>=]*")
_EQ_RE = re.compile(rb"\s*=\s*")
_UNQUOTED_RE = re.compile(rb"[^\s>]*")

# The fast path: one match checks that a start tag is a plain sequence of
# attributes (every quote closed, no stray "=", a closing ">"), then one
# finditer over them gives each name and value span. Possessive quantifiers
# and atomic groups make these regexes tokenize exactly as _scan_tag_slow's
# loop does (no backtracking into another split of the same bytes); a tag
# they do not match goes to that loop.
_STEP = (
    rb"""(?>[\s/]*+[^\s/>=]++"""
    rb"""(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|(?!["'])[^\s>]*+)|(?!\s*=)))"""
)
_FAST_TAG_RE = re.compile(rb"<([A-Za-z][A-Za-z0-9:_-]*+)(" + _STEP + rb"*+)[\s/]*+>")
_ATTR_RE = re.compile(
    rb"""[\s/]*+([^\s/>=]++)(?:\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s>]*+)))?+"""
)

#: elements whose content is text, not markup (a "<img" inside is no tag)
_RAW_TEXT = frozenset(
    {b"script", b"style", b"textarea", b"title", b"xmp", b"plaintext"}
)
_CLOSE_RE = {t: re.compile(rb"</" + t + rb"[\s/>]", re.IGNORECASE) for t in _RAW_TEXT}

_CSS_URL_RE = re.compile(
    rb"""url\(\s*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'()]+))\s*\)""", re.IGNORECASE
)
_CSS_IMPORT_RE = re.compile(
    rb"""@import\s+(?:"([^"\n]*)"|'([^'\n]*)')""", re.IGNORECASE
)
_CSS_COMMENT_RE = re.compile(rb"/\*.*?(?:\*/|$)", re.DOTALL)

_HTML_ESCAPES = str.maketrans(
    {"&": "&amp;", '"': "&quot;", "'": "&#39;", "<": "&lt;", ">": "&gt;"}
)


def _rules_by_tag(rules: Iterable[LinkRule]) -> dict[bytes, dict[bytes, bool]]:
    by_tag: dict[bytes, dict[bytes, bool]] = {}
    for rule in rules:
        by_tag.setdefault(rule.tag.encode(), {})[rule.attr.encode()] = rule.srcset
    by_tag.setdefault(b"base", {})[b"href"] = False
    return by_tag


_DEFAULT_RULES = _rules_by_tag(LINK_RULES)


def ascii_compatible(encoding: str | None) -> bool:
    if not encoding:
        return True
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        return False
    probe = "<a href='x'>"
    try:
        return codec.encode(probe)[0] == probe.encode("ascii")
    except UnicodeError:
        return False


def _apply(body: bytes, edits: list[Edit]) -> bytes:
    if not edits:
        return body
    out: list[bytes] = []
    pos = 0
    for start, end, new in sorted(edits):
        out.append(body[pos:start])
        out.append(new)
        pos = end
    out.append(body[pos:])
    return b"".join(out)


class _Rewriter:
    def __init__(self, resolve: Resolve, encoding: str | None) -> None:
        self.resolve = resolve
        self.encoding = encoding or "utf-8"
        self.edits: list[Edit] = []
        # a page repeats its links: the same bytes get the same answer
        self.answers: dict[tuple[bytes, str, bool], bytes | None] = {}

    def _decode(self, raw: bytes, escaped: bool) -> str:
        text = raw.decode(self.encoding, errors="replace")
        return html.unescape(text) if escaped and "&" in text else text

    def value(
        self, body: bytes, start: int, end: int, kind: str, escaped: bool
    ) -> None:
        """Offer the URL at body[start:end] to ``resolve``."""
        raw = body[start:end]
        key = (raw, kind, escaped)
        try:
            answer = self.answers[key]
        except KeyError:
            answer = self.answers[key] = self._answer(raw, kind, escaped)
        if answer is not None:
            self.edits.append((start, end, answer))

    def _answer(self, raw: bytes, kind: str, escaped: bool) -> bytes | None:
        url = self._decode(raw, escaped).strip(" \t\n\r\f")
        if not url:
            return None
        new = self.resolve(url, kind)
        if new is None or new == url:
            return None
        if escaped:
            new = new.translate(_HTML_ESCAPES)
        return new.encode(self.encoding, errors="xmlcharrefreplace")

    def srcset(self, body: bytes, start: int, end: int) -> None:
        # HTML's srcset grammar: candidates "URL [descriptor]" split by commas.
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
                self.value(body, url_start, url_end, "link", escaped=True)
            if url_end == pos:  # no trailing comma: skip the descriptors
                while pos < end and body[pos] != ord(","):
                    pos += 1

    def css(self, body: bytes, start: int, end: int, escaped: bool) -> None:
        chunk = body[start:end]
        comments = (
            [m.span() for m in _CSS_COMMENT_RE.finditer(chunk)]
            if b"/*" in chunk
            else []
        )

        def in_comment(pos: int) -> bool:
            return any(a <= pos < b for a, b in comments)

        for regex in (_CSS_URL_RE, _CSS_IMPORT_RE):
            for match in regex.finditer(chunk):
                if in_comment(match.start()):
                    continue
                for group in range(1, (regex.groups or 0) + 1):
                    if match.group(group) is not None:
                        a, b = match.span(group)
                        if escaped and group == 3:
                            a, b = _strip_quote_refs(chunk, a, b)
                        self.value(body, start + a, start + b, "link", escaped)
                        break


_QUOTE_REFS = (b"&quot;", b"&#34;", b"&#x22;", b"&#39;", b"&#x27;", b"&apos;")


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


def rewrite_css(
    body: bytes, resolve: Resolve, encoding: str | None = "utf-8"
) -> tuple[bytes, int]:
    """A stylesheet with its URLs replaced as ``resolve`` says, and how many
    were."""
    if not ascii_compatible(encoding):
        return body, 0
    rw = _Rewriter(resolve, encoding)
    rw.css(body, 0, len(body), escaped=False)
    return _apply(body, rw.edits), len(rw.edits)


def _master_re(by_tag: dict[bytes, dict[bytes, bool]]) -> re.Pattern[bytes]:
    """What the scan jumps to, in the lower-cased page: comments and start
    tags that may hold links or raw text. (It also stops at any "style": an
    attribute of any tag may hold url(); rewrite_html finds those with
    bytes.find, since an alternation starting with "s" or "<" under
    IGNORECASE made the regex engine try every byte of the page, 4x
    slower.)"""
    names = sorted({n.lower() for n in by_tag} | _RAW_TEXT, key=len, reverse=True)
    alternation = b"|".join(re.escape(n) for n in names)
    return re.compile(rb"<(?:!--|(?:" + alternation + rb")(?=[\s/>]))")


_DEFAULT_MASTER = _master_re(_DEFAULT_RULES)


def _offer(
    rw: _Rewriter,
    body: bytes,
    tag: bytes,
    attrs: dict[bytes, bool] | None,
    *,
    name: bytes,
    start: int,
    end: int,
) -> None:
    """Hand the value of attribute ``name`` (at ``start:end``) to the rewriter
    if it can hold links: a style, a srcset, or a link attribute of ``tag``."""
    if name == b"style":
        rw.css(body, start, end, escaped=True)
    elif attrs is not None and name in attrs:
        if attrs[name]:
            rw.srcset(body, start, end)
        else:
            kind = "base" if tag == b"base" else "link"
            rw.value(body, start, end, kind, escaped=True)


def _scan_tag(
    body: bytes, lt: int, by_tag: dict[bytes, dict[bytes, bool]], rw: _Rewriter
) -> int:
    """Offer the link attributes of the start tag at ``lt``; returns where
    the scan goes on (after its raw text, for script/style/…)."""
    match = _FAST_TAG_RE.match(body, lt)
    if match is None:
        return _scan_tag_slow(body, lt, by_tag, rw)
    tag = match.group(1).lower()
    attrs = by_tag.get(tag)
    for attr in _ATTR_RE.finditer(body, match.start(2), match.end(2)):
        group = attr.lastindex
        if group is None or group < 2:
            continue  # no value
        start, end = attr.span(group)
        if end <= start:
            continue
        _offer(rw, body, tag, attrs, name=attr.group(1).lower(), start=start, end=end)
    pos = match.end()
    if tag in _RAW_TEXT and body[pos - 2 : pos] != b"/>":
        return _raw_text(body, pos, tag, rw)
    return pos


def _raw_text(body: bytes, pos: int, tag: bytes, rw: _Rewriter) -> int:
    close_match = _CLOSE_RE[tag].search(body, pos)
    text_end = len(body) if close_match is None else close_match.start()
    if tag == b"style":
        rw.css(body, pos, text_end, escaped=False)
    return text_end


def _scan_tag_slow(
    body: bytes, lt: int, by_tag: dict[bytes, dict[bytes, bool]], rw: _Rewriter
) -> int:
    """_scan_tag for the tags the fast path does not take: unclosed quotes,
    stray "=", a tag cut off by the end of the page."""
    size = len(body)
    match = _TAG_RE.match(body, lt)
    if match is None:
        return lt + 1
    tag = match.group(1).lower()
    attrs = by_tag.get(tag)
    pos = match.end()
    while True:
        pos = _SPACE_RE.match(body, pos).end()  # type: ignore[union-attr]
        if pos >= size or body[pos] == ord(">"):
            pos += 1
            break
        name_match = _NAME_RE.match(body, pos)
        if name_match is None:  # a stray '=': skip it
            pos += 1
            continue
        name = name_match.group(0).lower()
        pos = name_match.end()
        eq = _EQ_RE.match(body, pos)
        if eq is None:
            continue  # attribute without a value
        pos = eq.end()
        quote = body[pos : pos + 1]
        if quote in (b'"', b"'"):
            close = body.find(quote, pos + 1)
            if close < 0:
                return size
            start, end, pos = pos + 1, close, close + 1
        else:
            unquoted = _UNQUOTED_RE.match(body, pos)
            start = pos
            end = pos = unquoted.end() if unquoted else pos
        if end <= start:
            continue
        _offer(rw, body, tag, attrs, name=name, start=start, end=end)
    if tag in _RAW_TEXT and body[pos - 2 : pos] != b"/>":
        return _raw_text(body, pos, tag, rw)
    return pos


def rewrite_html(
    body: bytes,
    resolve: Resolve,
    encoding: str | None = "utf-8",
    rules: Iterable[LinkRule] | None = None,
) -> tuple[bytes, int]:
    """An HTML page with its link values replaced as ``resolve`` says, and how
    many were."""
    if not ascii_compatible(encoding):
        return body, 0
    if rules is None:
        by_tag, master = _DEFAULT_RULES, _DEFAULT_MASTER
    else:
        by_tag = _rules_by_tag(rules)
        master = _master_re(by_tag)
    rw = _Rewriter(resolve, encoding)
    size = len(body)
    low = body.lower()  # ASCII case folding: same length, same offsets
    tag = master.search(low)
    style = low.find(b"style")
    pos = 0
    while pos < size:
        if tag is not None and tag.start() < pos:
            tag = master.search(low, pos)
        if 0 <= style < pos:
            style = low.find(b"style", pos)
        if style >= 0 and (tag is None or style < tag.start()):
            # "style": if it is inside a start tag, scan that tag
            lt = body.rfind(b"<", pos, style)
            end = _scan_tag(body, lt, by_tag, rw) if lt >= 0 else style
            pos = max(end, style + 5)
        elif tag is None:
            break
        elif low.startswith(b"<!--", tag.start()):
            close = body.find(b"-->", tag.start() + 4)
            pos = size if close < 0 else close + 3
        else:
            pos = _scan_tag(body, tag.start(), by_tag, rw)
    return _apply(body, rw.edits), len(rw.edits)
