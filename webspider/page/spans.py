"""The link values a page scan found, as byte spans: ``Span`` (where a value
is in the page's bytes, what it says, its flags), and ``pack_spans`` /
``unpack_spans``, which keep many pages' spans in 24 bytes each.

Apart from webspider.page.scan because the spans outlive the scan: the
mirror rewrites them (webspider.mirror.rewrite), the page worker sends them
packed (webspider.pageworker), the fix-up reads them back
(webspider.mirror.fixup), none of which runs the scan.

Pure: standard library only.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from webspider.page.charrefs import unescape_attribute

if TYPE_CHECKING:
    from collections.abc import Iterable

#: Span flags. BASE: the value is ``<base href>`` (not a link to follow);
#: ESCAPED: the value is in an HTML attribute, so character references apply
#: (not in ``<style>`` text).
BASE = 1
ESCAPED = 2

#: (start, end, value, flags): one link value at ``body[start:end]``.
Span = tuple[int, int, str, int]


def pack_spans(spans: Iterable[Span]) -> array[int]:
    """Spans without their values, 24 bytes each (to keep many): the values
    are read again from the bytes by unpack_spans."""
    packed = array("q")
    for start, end, _, flags in spans:
        packed.extend((start, end, flags))
    return packed


def unpack_spans(body: bytes, packed: array[int], encoding: str) -> list[Span]:
    """The spans pack_spans kept, with their values read from ``body`` as the
    scan reads them."""
    spans: list[Span] = []
    for i in range(0, len(packed), 3):
        start, end, flags = packed[i], packed[i + 1], packed[i + 2]
        value = body[start:end].decode(encoding, "replace")
        if flags & ESCAPED:
            value = unescape_attribute(value)
        spans.append((start, end, value, flags))
    return spans
