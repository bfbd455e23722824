"""Rewrite the links of an HTML page or a stylesheet, touching nothing else.

Not a parse and re-serialisation: the spans of the link values that the
scan of the page found (webspider.page.scan: the elements and
attributes of the link rules, ``<base href>``, ``srcset`` candidates, and
``url(...)``/``@import`` in ``<style>``, ``style=""`` and stylesheets) are
offered to ``resolve``, and its answers are spliced in. Every byte outside
a replaced span is kept, so the text is never re-encoded, and a page the
scan does not understand is left as it was.

``resolve(url, kind)`` gets the link as the page wrote it (HTML character
references undone) and ``kind`` — ``"base"`` for ``<base href>``, ``"link"``
otherwise — and returns the new value or None to keep the old one. Returned
values are escaped for where they go (``&`` → ``&amp;`` in HTML).

Only ASCII-compatible encodings are rewritten (UTF-16 pages are kept as they
are: splicing ASCII into them would corrupt them).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable

from webspider.page.encoding import ascii_compatible
from webspider.page.linkrules import LINK_RULES, LinkRule
from webspider.page.scan import scan, scan_css
from webspider.page.spans import BASE, ESCAPED, Span

__all__ = ["ascii_compatible", "rewrite_css", "rewrite_html", "rewrite_spans"]

Resolve = Callable[[str, str], "str | None"]

_WS = " \t\n\r\f"
_HTML_ESCAPES = str.maketrans(
    {"&": "&amp;", '"': "&quot;", "'": "&#39;", "<": "&lt;", ">": "&gt;"}
)


def rewrite_spans(
    body: bytes,
    spans: Iterable[Span],
    resolve: Resolve,
    encoding: str | None,
    *,
    track: Container[str] = (),
    tracked: list[Span] | None = None,
) -> tuple[bytes, int]:
    """``body`` with the link values at ``spans`` (webspider.page.scan)
    replaced as ``resolve`` says, and how many were. Every other byte is
    kept.

    Spans whose value (stripped) is in ``track`` once ``resolve`` has seen
    it are appended to ``tracked`` as spans of the result, with the value
    written there: rewriting the result with them later needs no scan."""
    encoding = encoding or "utf-8"
    # a page repeats its links: the same value gets the same answer (and is
    # tracked or not alike)
    answers: dict[tuple[str, int], tuple[tuple[bytes, str] | None, bool]] = {}
    out: list[bytes] = []
    pos = 0
    shift = 0  # how much longer the result is than body, before ``pos``
    count = 0
    for start, end, value, flags in spans:
        key = (value, flags)
        try:
            answer, again = answers[key]
        except KeyError:
            answer = _answer(value, flags, resolve, encoding)
            again = tracked is not None and value.strip(_WS) in track
            answers[key] = answer, again
        if start < pos:
            continue
        if again:
            assert tracked is not None
            if answer is None:
                tracked.append((start + shift, end + shift, value, flags))
            else:
                new_start = start + shift
                tracked.append(
                    (new_start, new_start + len(answer[0]), answer[1], flags)
                )
        if answer is None:
            continue
        data = answer[0]
        out.append(body[pos:start])
        out.append(data)
        shift += len(data) - (end - start)
        pos = end
        count += 1
    if not count:
        return body, 0
    out.append(body[pos:])
    return b"".join(out), count


def _answer(
    value: str, flags: int, resolve: Resolve, encoding: str
) -> tuple[bytes, str] | None:
    """What replaces ``value`` (as bytes, and as the text they say), or None
    to keep it."""
    url = value.strip(_WS)
    if not url:
        return None
    new = resolve(url, "base" if flags & BASE else "link")
    if new is None or new == url:
        return None
    escaped = new.translate(_HTML_ESCAPES) if flags & ESCAPED else new
    return escaped.encode(encoding, errors="xmlcharrefreplace"), new


def rewrite_html(
    body: bytes,
    resolve: Resolve,
    encoding: str | None = "utf-8",
    rules: Iterable[LinkRule] | None = None,
    *,
    track: Container[str] = (),
    tracked: list[Span] | None = None,
) -> tuple[bytes, int]:
    """An HTML page with its link values replaced as ``resolve`` says, and how
    many were (``track``, ``tracked``: as for rewrite_spans). A page the crawl
    scanned already has its spans (ParsedPage.spans): rewrite_spans spares
    the scan."""
    if not ascii_compatible(encoding):
        return body, 0
    found = scan(body, encoding or "utf-8", LINK_RULES if rules is None else rules)
    return rewrite_spans(
        body, found.spans, resolve, encoding, track=track, tracked=tracked
    )


def rewrite_css(
    body: bytes,
    resolve: Resolve,
    encoding: str | None = "utf-8",
    *,
    track: Container[str] = (),
    tracked: list[Span] | None = None,
) -> tuple[bytes, int]:
    """A stylesheet with its URLs replaced as ``resolve`` says, and how many
    were (``track``, ``tracked``: as for rewrite_spans)."""
    if not ascii_compatible(encoding):
        return body, 0
    spans = scan_css(body, encoding or "utf-8").spans
    return rewrite_spans(body, spans, resolve, encoding, track=track, tracked=tracked)
