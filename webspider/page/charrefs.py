"""Character references in HTML attribute values, undone as HTML reads
them (``unescape_attribute``): ``&amp;``, ``&#38;``, and the legacy names
without ``;`` except before ``=`` or a letter or digit.

Apart from webspider.page.scan because every reader of a link value needs
it, the scan and the spans read back from bytes (webspider.page.spans)
alike.

Pure: standard library only.
"""

from __future__ import annotations

import html
import re
from html.entities import html5 as _HTML5_REFS

# Character references in attribute values, as HTML reads them: a named
# reference without ";" followed by "=" or a letter or digit is text
# (``?a=1&copy=2`` keeps "&copy").
_REF_RE = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|([A-Za-z][A-Za-z0-9]*)(;?))")


def _ref(match: re.Match[str]) -> str:
    name = match.group(1)
    if name is None or match.group(2):
        return html.unescape(match.group(0))
    # no ";": only a legacy name, whole, and not followed by "="
    end = match.end()
    if name in _HTML5_REFS and match.string[end : end + 1] != "=":
        return _HTML5_REFS[name]
    return match.group(0)


def unescape_attribute(value: str) -> str:
    """An attribute value with its character references undone."""
    return _REF_RE.sub(_ref, value) if "&" in value else value
