"""How the page scan reads start tags: the link rules compiled into the
regexes it runs (``rule_table``: the master regex that finds the next tag
that matters, a reader per element), and a start tag's attributes
(``attributes``, its fast path one regex match a tag, ``_attributes_slow``
for the rest).

Apart from webspider.page.scan (which walks the page and takes the links)
because it is the tokenizer: what a tag is, how its attributes are read,
worked out once per rule set.

Pure: standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from webspider.page.linkrules import LinkRule

# A start tag's attributes. The fast path is one regex match per tag (see
# _reader): lookaheads find the first value of each attribute the scan
# wants, and the match itself checks that the tag is a plain sequence of
# attributes (every quote closed, no stray "=", a closing ">"), all inside
# the regex engine. Possessive quantifiers and atomic groups make it
# tokenize exactly as _attributes_slow's loop does; a tag it does not match
# goes to that loop. Both run on the lower-cased page (same offsets), so
# names need no case folding.
_VALUE = rb"""(?:"[^"]*+"|'[^']*+'|(?!["'])[^\s>]*+)"""
_STEP = rb"(?>[\s/]*+[^\s/>=]++(?:\s*+=\s*+" + _VALUE + rb"|(?!\s*=)))"


@dataclass(frozen=True)
class _Reader:
    """Reads the start tags of one element (or of any, ``name`` None)."""

    regex: re.Pattern[bytes]
    #: the attributes read, in the order of their groups (2, 3, …)
    attrs: tuple[bytes, ...]


def _looks(attrs: Iterable[bytes]) -> bytes:
    """One group per attribute: (?=(?:STEP)*?[\\s/]*+NAME=(VALUE)), after as
    few whole attributes as possible, NAME with a value; optional, so a tag
    without it matches."""
    return b"".join(
        rb"(?:(?=(?:"
        + _STEP
        + rb")*?[\s/]*+"
        + re.escape(attr)
        + rb"\s*+=\s*+("
        + _VALUE
        + rb"))|)"
        for attr in attrs
    )


def _reader(name: bytes | None, attrs: Iterable[bytes]) -> _Reader:
    attrs = tuple(sorted(attrs))
    head = re.escape(name) if name else rb"[a-z][a-z0-9:_-]*+"
    regex = re.compile(rb"<(" + head + rb")" + _looks(attrs) + _STEP + rb"*+[\s/]*+>")
    return _Reader(regex, attrs)


_TAG_RE = re.compile(rb"<([A-Za-z][A-Za-z0-9:_-]*)")
_SPACE_RE = re.compile(rb"[\s/]*")
_NAME_RE = re.compile(rb"[^\s/>=][^\s/>=]*")
_EQ_RE = re.compile(rb"\s*=\s*")
_UNQUOTED_RE = re.compile(rb"[^\s>]*")

#: elements whose content is text, not markup (a "<img" inside is no tag)
RAW_TEXT = frozenset({b"script", b"style", b"textarea", b"title", b"xmp", b"plaintext"})


@dataclass(frozen=True)
class RuleTable:
    """The link rules as the scan uses them, worked out once per rule set."""

    #: tag → ((attribute, rule), ...)
    by_tag: dict[bytes, tuple[tuple[bytes, LinkRule], ...]]
    #: what the scan jumps to in the lower-cased page
    master: re.Pattern[bytes]
    #: tag → the reader of the attributes the scan wants of it
    readers: dict[bytes, _Reader]
    #: the reader of any other tag (its style)
    any_tag: _Reader
    #: the rule of ``<a href>`` when it is the only rule for <a> (as in
    #: LINK_RULES): most tags of most pages are such links, and ``master``
    #: reads them whole (groups 2-4: href, rel, style; 5: empty, there when
    #: the tag closes)
    anchor: LinkRule | None = None


#: attributes read besides the rules' own: what decides a link's kind,
#: nofollow and text, and what <base> and <meta> say
_CONTEXT = {
    b"a": (b"rel",),
    b"area": (b"rel", b"alt"),
    b"img": (b"alt",),
    b"link": (b"rel",),
    b"input": (b"type",),
    b"base": (b"href",),
    b"meta": (b"name", b"http-equiv", b"content"),
}
_OTHER_TAGS = frozenset({b"base", b"meta"})
#: what the master regex reads of a plain <a> (groups 2-4)
_ANCHOR_ATTRS = (b"href", b"rel", b"style")


@lru_cache(maxsize=16)
def rule_table(rules: tuple[LinkRule, ...]) -> RuleTable:
    by_tag: dict[bytes, list[tuple[bytes, LinkRule]]] = {}
    for rule in rules:
        by_tag.setdefault(rule.tag.lower().encode(), []).append(
            (rule.attr.lower().encode(), rule)
        )
    names = sorted(set(by_tag) | RAW_TEXT | _OTHER_TAGS, key=len, reverse=True)
    alternation = b"|".join(re.escape(n) for n in names)
    # (It also stops at any "style": an attribute of any tag may hold url();
    # _Scanner.run() finds those with bytes.find, since an alternation starting with
    # "s" or "<" under IGNORECASE made the regex engine try every byte.)
    readers = {
        tag: _reader(
            tag,
            {attr for attr, _ in by_tag.get(tag, ())}
            | set(_CONTEXT.get(tag, ()))
            | {b"style"},
        )
        for tag in names
    }
    anchor_rules = by_tag.get(b"a", [])
    anchor = anchor_rules[0][1] if len(anchor_rules) == 1 else None
    a_reader = readers.get(b"a")
    if (
        a_reader is None
        or a_reader.attrs != _ANCHOR_ATTRS
        or anchor_rules[0][0] != b"href"
    ):
        anchor = None  # _Scanner.run() knows these groups only
    # A page's other tags (<span>, <div>, every end tag: 1.9 million of
    # python3.11-doc's 2.1 million "<") are refused on their first byte, before
    # the alternation's branches are tried one by one.
    first = (
        rb"<(?=[!"
        + b"".join(re.escape(n[:1]) for n in sorted({n[:1] for n in names}))
        + rb"])"
    )
    if anchor is None:
        # group 1: the element's name (None: a comment)
        master = re.compile(first + rb"(?:!--|(" + alternation + rb")(?=[\s/>]))")
    else:
        # One pass over an <a>: each attribute step takes href, rel or style
        # into its group, or skips any other attribute. A repeated group
        # keeps the last value where HTML keeps the first, so _Scanner.run() sends a
        # tag that may say href or rel twice down the long path.
        others = b"|".join(re.escape(n) for n in names if n != b"a")
        step = b"".join(
            (
                rb"(?>[\s/]*+(?:",
                *(attr + rb"\s*+=\s*+(" + _VALUE + rb")|" for attr in _ANCHOR_ATTRS),
                rb"[^\s/>=]++(?:\s*+=\s*+" + _VALUE + rb"|(?!\s*=))))",
            )
        )
        master = re.compile(
            first
            + rb"(?:!--|(a)(?=[\s/>])(?:"
            + step
            + rb"*+[\s/]*+>())?|("
            + others
            + rb")(?=[\s/>]))"
        )
    return RuleTable(
        {tag: tuple(pairs) for tag, pairs in by_tag.items()},
        master,
        readers,
        _reader(None, {b"style"}),
        anchor,
    )


def _attributes_slow(
    body: bytes, lt: int
) -> tuple[bytes, dict[bytes, tuple[int, int]], int] | None:
    """attributes() for the tags its fast path does not take: unclosed quotes, stray
    "=", a tag cut off by the end of the page. None: no tag here."""
    size = len(body)
    match = _TAG_RE.match(body, lt)
    if match is None:
        return None
    attrs: dict[bytes, tuple[int, int]] = {}
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
            if close < 0:  # the quote never closes: the rest is no tag
                return match.group(1).lower(), attrs, size
            start, end, pos = pos + 1, close, close + 1
        else:
            unquoted = _UNQUOTED_RE.match(body, pos)
            start = pos
            end = pos = unquoted.end() if unquoted else pos
        if name not in attrs:
            attrs[name] = (start, end)
    return match.group(1).lower(), attrs, min(pos, size)


def attributes(
    low: bytes,
    lt: int,
    table: RuleTable,
    name: bytes | None = None,
    fast: bool = True,
) -> tuple[bytes, dict[bytes, tuple[int, int]], int] | None:
    """The start tag at ``low[lt]`` (the lower-cased page; ``name`` when
    known): its name, the value spans of the attributes the scan wants of it
    (or of all, off the fast path), and where it ends; None when there is no
    tag there."""
    if fast:
        reader = table.readers.get(name, table.any_tag) if name else table.any_tag
        match = reader.regex.match(low, lt)
        if match is not None:
            regs = match.regs
            attrs: dict[bytes, tuple[int, int]] = {}
            for group, attr in enumerate(reader.attrs, 2):
                start, end = regs[group]
                if start >= 0:
                    if end > start and low[start] in QUOTES:
                        start, end = start + 1, end - 1
                    attrs[attr] = (start, end)
            return match.group(1), attrs, match.end()
    return _attributes_slow(low, lt)


QUOTES = frozenset(b"\"'")
