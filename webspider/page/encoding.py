"""A page's encoding from its bytes and its Content-Type, as Scrapy's
``TextResponse.encoding`` works it out, without a response.

The page worker (webspider.pageworker) works a page's encoding out with
this, off the crawl's core, and hands it back with the page's links: the
crawl's process no longer scans each body for a ``<meta charset>`` (about a
third of its side of the worker's round trip on small pages).

Scrapy's order (scrapy/http/response/text.py, 2.19): the encoding the
response was made with (the crawl sends that one, and nothing is worked out
here), else the body's byte order mark, else the Content-Type's charset,
else the body's own declaration (``<meta charset>``, ``<?xml encoding>``),
else inferred as w3lib's ``html_to_unicode`` does with Scrapy's detection:
ASCII, else UTF-8, else charset_normalizer's best guess, else ASCII.
tests/test_page_encoding.py compares the answers with Scrapy's own.

Ground floor: w3lib (and charset_normalizer, imported only for bytes that
are neither ASCII nor UTF-8 and declare nothing).
"""

from __future__ import annotations

import codecs
from functools import lru_cache

from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

#: TextResponse._DEFAULT_ENCODING: the first guess, and the last resort
DEFAULT_ENCODING = "ascii"


def body_encoding(body: bytes, content_type: str) -> str:
    """What ``TextResponse.encoding`` is for ``body`` served with this
    Content-Type (the header's value, decoded as Latin-1; "" without one),
    for a response made without ``encoding=``."""
    declared = (
        read_bom(body)[0]
        or http_content_type_encoding(content_type)
        or html_body_declared_encoding(body)
    )
    if declared:
        return declared
    # TextResponse._body_inferred_encoding: html_to_unicode finds no BOM nor
    # declaration either (the same checks), so it is its detection's answer,
    # without decoding the page
    inferred = _auto_detect(body)
    if inferred is None:
        return DEFAULT_ENCODING
    if inferred in {"utf-16", "utf-32"}:
        return inferred + "-be"
    return inferred


def _auto_detect(body: bytes) -> str | None:
    """TextResponse._auto_detect_fun."""
    for encoding in (DEFAULT_ENCODING, "utf-8"):
        try:
            body.decode(encoding)
        except UnicodeError:
            continue
        return resolve_encoding(encoding)
    from charset_normalizer import from_bytes  # noqa: PLC0415 (rarely needed)

    match = from_bytes(body).best()
    return resolve_encoding(match.encoding) if match else None


@lru_cache(maxsize=64)
def ascii_compatible(encoding: str | None) -> bool:
    """Whether a page in ``encoding`` can be scanned and rewritten in place:
    ASCII text is the same bytes in it (not so in UTF-16 or UTF-32)."""
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
