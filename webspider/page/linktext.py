"""The text of a link (``link_text``): what an ``<a>`` holds up to its end
tag or the next ``<a>``, markup dropped, whitespace collapsed, at most
TEXT_LIMIT characters.

Apart from webspider.page.scan because it is read later, and only for the
few links that need it (a broken link's report): the scan keeps the offset
where an ``<a>``'s content starts, and the page worker's client
(webspider.pageworker.client) reads the text from it.

Pure: standard library only.
"""

from __future__ import annotations

import html
import re

# Where an <a>'s text ends: its end tag, or the next <a> (which closes it).
_A_END_RE = re.compile(rb"</a[\s/>]|<a[\s/>]", re.IGNORECASE)
_MARKUP_RE = re.compile(rb"<!--.*?(?:-->|$)|<[^>]*(?:>|$)", re.DOTALL)
#: how far an <a>'s text is looked for, and how long it is kept
_TEXT_WINDOW = 4096
TEXT_LIMIT = 200


def link_text(body: bytes, encoding: str, pos: int) -> str:
    """The text of the ``<a>`` whose content starts at ``body[pos]``: up to
    its end tag or the next ``<a>``, markup dropped, whitespace collapsed."""
    end_match = _A_END_RE.search(body, pos, pos + _TEXT_WINDOW)
    end = end_match.start() if end_match else min(len(body), pos + _TEXT_WINDOW)
    chunk = body[pos:end]
    if b"<" in chunk:
        chunk = _MARKUP_RE.sub(b"", chunk)
    text = chunk.decode(encoding, "replace")
    return collapse(html.unescape(text) if "&" in text else text)


def collapse(text: str) -> str:
    """Whitespace runs as one space, at most TEXT_LIMIT characters (str.split()
    and the regex's \\s are both str.isspace())."""
    return " ".join(text.split())[:TEXT_LIMIT] if text else ""
