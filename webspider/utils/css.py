"""URLs inside CSS: ``url(...)`` and ``@import "..."``.

A regex scan, not a CSS parser: it is what browsers need to fetch a page's
requisites, and stylesheets from strangers can be large and broken, so the
scan is linear and never fails."""

from __future__ import annotations

import re
from collections.abc import Iterator

# url( "x" ) / url('x') / url(x) — the quoted forms may hold ')' characters.
_URL_RE = re.compile(
    r"""url\(\s*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'()]+))\s*\)""", re.IGNORECASE
)
# @import "x"; @import 'x'; (the url(...) form is covered by _URL_RE)
_IMPORT_RE = re.compile(r"""@import\s+(?:"([^"\n]*)"|'([^'\n]*)')""", re.IGNORECASE)
# an unclosed comment runs to the end (so "/*/*/*…" is read once, not once
# per "/*")
_COMMENT_RE = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)


def css_urls(css: str) -> Iterator[str]:
    """Every URL a stylesheet refers to, in order, comments skipped."""
    if "/*" in css:
        css = _COMMENT_RE.sub(" ", css)
    for match in _URL_RE.finditer(css):
        value = match.group(1) or match.group(2) or match.group(3)
        if value:
            yield value.strip()
    if "@import" in css.lower():
        for match in _IMPORT_RE.finditer(css):
            value = match.group(1) or match.group(2)
            if value:
                yield value.strip()
