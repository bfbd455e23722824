"""Flat lists of numbers and strings in bytes: record values in the embedded
crawl state (webspider.frontier.sqliterecords, format 7).

The largest record a page keeps while a crawl runs is the mirror's index
record (webspider.mirror.state ``Entry.index_json``), a list such as
``["<43-character base64 SHA-256>", 3832, 1, 9, 1796317053, 0]``: ~65
characters of JSON, one row a page done. Packed, it takes ~45 bytes: the
hash's 32 bytes instead of its 43 characters, a timestamp in 5 bytes
instead of 10 digits, no quotes, commas or brackets. (bench/README.md,
"Smaller rows a URL and a page".)

``pack(value)`` gives the bytes of a list whose items are each an ``int``
(64-bit), a ``str`` or ``None``, or None for anything else (which the
caller keeps as JSON). The bytes begin with ``MARK`` (0xFF: never a byte of
UTF-8, so a packed list is told from a string stored as its UTF-8 bytes);
then each item, a first byte ``h`` saying what it is:

- ``0x00``-``0x3F``: the integer ``h`` (0 to 63: flags, small counts);
- ``0x40``-``0x47``: an integer in the ``h - 0x3F`` bytes that follow
  (little-endian, two's complement);
- ``0x48``: None;
- ``0x49``: a string, its length in 4 bytes then its UTF-8;
- ``0x4A``: a string of URL-safe base64 without padding (a digest): the
  length of the bytes it encodes in 1 byte, then those bytes; only a string
  that encoding them gives back exactly is stored so;
- ``0x80``-``0xFF``: a string of ``h - 0x80`` bytes of UTF-8 (up to 127).

One byte says each item's kind and, for most, its size: ``unpack`` reads a
record in about 1 µs (the JSON decoder's scanner took ~0.3 µs for its
text; the index records are read for the links of every page).
``unpack(data)`` gives the list back, equal and of the same types.

Pure: standard library only.
"""

from __future__ import annotations

import re
from binascii import Error as BinasciiError
from binascii import a2b_base64, b2a_base64
from typing import Any

#: a packed list's first byte
MARK = 0xFF
_MARK = bytes([MARK])
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
_SMALL_END = 0x40
_INT = 0x3F  # + its bytes
_NONE = 0x48
_LONG_TEXT = 0x49
_DIGEST = 0x4A
_TEXT = 0x80  # + its bytes
#: strings worth trying as base64: 16 characters (12 bytes) or more of the
#: URL-safe alphabet, and at most 255 bytes' worth
_B64 = re.compile(r"[A-Za-z0-9_-]{16,340}").fullmatch
_FROM_URL_SAFE = str.maketrans("-_", "+/")
_TO_URL_SAFE = bytes.maketrans(b"+/", b"-_")
_from_bytes = int.from_bytes


def _encode_digest(raw: bytes) -> str:
    """``raw`` in URL-safe base64 without padding."""
    return (
        b2a_base64(raw, newline=False)
        .translate(_TO_URL_SAFE)[: (len(raw) * 4 + 2) // 3]
        .decode("ascii")
    )


def _digest(text: str) -> bytes | None:
    """The bytes ``text`` encodes in URL-safe base64 without padding, when
    encoding them gives ``text`` back exactly; else None."""
    if not _B64(text) or len(text) % 4 == 1:
        return None
    try:
        raw = a2b_base64(text.translate(_FROM_URL_SAFE) + "=" * (-len(text) % 4))
    except BinasciiError:
        return None
    return raw if _encode_digest(raw) == text else None


def pack(value: Any) -> bytes | None:
    """``value`` packed (see the module docstring), or None when it is not a
    list of ints, strings and Nones."""
    if type(value) is not list:
        return None
    out = bytearray(_MARK)
    for item in value:
        kind = type(item)
        if kind is int:
            if 0 <= item < _SMALL_END:
                out.append(item)
                continue
            if not _INT_MIN <= item <= _INT_MAX:
                return None
            size = ((item if item >= 0 else ~item).bit_length() + 8) // 8
            out.append(_INT + size)
            out += item.to_bytes(size, "little", signed=True)
        elif kind is str:
            raw = _digest(item)
            if raw is not None:
                out.append(_DIGEST)
                out.append(len(raw))
            else:
                raw = item.encode("utf-8", "surrogatepass")
                if len(raw) < 0x80:
                    out.append(_TEXT + len(raw))
                else:
                    out.append(_LONG_TEXT)
                    out += len(raw).to_bytes(4, "little")
            out += raw
        elif item is None:
            out.append(_NONE)
        else:  # a bool, a float, a list, a dict: JSON
            return None
    return bytes(out)


def unpack(data: bytes) -> list[Any]:
    """The list ``pack`` gave ``data`` for."""
    out: list[Any] = []
    append = out.append
    at, end = 1, len(data)
    while at < end:
        head = data[at]
        at += 1
        if head < _SMALL_END:
            append(head)
        elif head >= _TEXT:
            until = at + head - _TEXT
            append(data[at:until].decode("utf-8", "surrogatepass"))
            at = until
        elif head < _NONE:
            until = at + head - _INT
            append(_from_bytes(data[at:until], "little", signed=True))
            at = until
        elif head == _DIGEST:
            size = data[at]
            at += 1
            until = at + size
            # _encode_digest, inlined: the index records' first item
            append(
                b2a_base64(data[at:until], newline=False)
                .translate(_TO_URL_SAFE)[: (size * 4 + 2) // 3]
                .decode("ascii")
            )
            at = until
        elif head == _NONE:
            append(None)
        elif head == _LONG_TEXT:
            size = _from_bytes(data[at : at + 4], "little")
            at += 4
            append(data[at : at + size].decode("utf-8", "surrogatepass"))
            at += size
        else:
            raise ValueError(f"not a packed list: item kind {head:#x}")
    return out
