"""Duplicate content: pages whose body another URL already served.

Exact duplicates have the same body bytes (the item's ``content_hash``).
With normalisation on, HTML pages are also compared after removing markup
noise, in this order:

1. comments (``<!-- … -->``) are removed;
2. timestamps are removed: ISO 8601 date-times (``2024-05-01T12:30:00Z``,
   ``2024-05-01 12:30``), HTTP dates (``Wed, 01 May 2024 12:30:00 GMT``) and
   clock times with seconds (``12:30:00``) — see TIMESTAMP_RE;
3. every match of the user's own patterns (WEBSPIDER_DUPLICATES_IGNORE_RE,
   e.g. a CSRF token) is removed;
4. white space between tags is removed and every other run of white space
   becomes one space.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

EXACT = "exact"
NORMALIZED = "normalized"

_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)  # unclosed: to the end
TIMESTAMP_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} "
    r"\d{2}:\d{2}:\d{2} GMT"
    r"|\b\d{1,2}:\d{2}:\d{2}\b"
)
_BETWEEN_TAGS_RE = re.compile(r">\s+<")
_SPACE_RE = re.compile(r"\s+")


def normalize_html(text: str, ignore: Sequence[re.Pattern[str]] = ()) -> str:
    """The text of an HTML page without the noise listed in the module doc."""
    text = _COMMENT_RE.sub("", text)
    text = TIMESTAMP_RE.sub("", text)
    for pattern in ignore:
        text = pattern.sub("", text)
    text = _BETWEEN_TAGS_RE.sub("><", text)
    return _SPACE_RE.sub(" ", text).strip()


def normalized_hash(text: str, ignore: Sequence[re.Pattern[str]] = ()) -> str:
    return hashlib.sha256(normalize_html(text, ignore).encode("utf-8")).hexdigest()
