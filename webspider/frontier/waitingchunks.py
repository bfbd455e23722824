"""The bytes of ``links.waiting``'s chunks: how a target's waiting links
are packed into one ``links`` BLOB of the ``waiting`` table and read back
(the layout is in webspider.frontier.sqlitewaiting.SQLiteWaiting's
docstring), and how URL codes are stored in 3 bytes that sort as the codes
do.

Apart from SQLiteWaiting because it is the format, not the store: pure
functions of bytes that know no SQL and no connection (``materialise`` is
registered on the connection as ``wl_clear``), tested and replayed
(bench/scale/waitingreplay.py) on their own.

Pure: standard library only.
"""

from __future__ import annotations

from binascii import Error as BinasciiError
from binascii import a2b_base64, b2a_base64
from typing import Any

from webspider.records import flag_text, flags_of

#: the characters of a URL code (URL-safe base64), in code point order
CODE_CHARS = "".join(
    sorted("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
)
#: standard base64's characters in the order of their values
_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#: a code's character → the base64 character of its rank in code point
#: order (decoded: 6 bits a character, in the code's order); any other
#: ASCII character → one base64 refuses
_TO_RANK = {c: "*" for c in range(128)}
_TO_RANK.update({ord(c): _B64_CHARS[i] for i, c in enumerate(CODE_CHARS)})
_FROM_RANK = str.maketrans(_B64_CHARS, CODE_CHARS)


def pack_code(code: str) -> str | bytes:
    """A URL code of 4 characters as 3 bytes (its 24 bits, in an order that
    keeps the codes'), anything else as itself (a TEXT: SQLite sorts every
    TEXT before every BLOB)."""
    if len(code) == 4 and code.isascii():
        try:
            return a2b_base64(code.translate(_TO_RANK), strict_mode=True)
        except BinasciiError:
            pass
    return code


def unpack_code(stored: str | bytes) -> str:
    if type(stored) is bytes:
        return b2a_base64(stored, newline=False).decode("ascii").translate(_FROM_RANK)
    return str(stored)


def pack_key(key: str) -> tuple[str | bytes, str | bytes]:
    head, newline, tail = key.partition("\n")
    if not newline:
        raise ValueError(f"{key!r}: a waiting link's key is <target>\\n<page>")
    return pack_code(head), pack_code(tail)


#: a link in a chunk: page (3 bytes, or a TEXT code) → [flags, text (UTF-8)]
Links = dict[Any, list[Any]]


def code_order(page: str | bytes) -> tuple[bool, str | bytes]:
    """A stored code's place in SQLite's order (every TEXT before every BLOB)."""
    return type(page) is bytes, page


def put_varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = data[at]
        at += 1
        n |= (byte & 0x7F) << shift
        if byte < 0x80:
            return n, at
        shift += 7


#: a link's size field (bits 5-7 of its first byte): the text's length up
#: to 5, ``NO_TEXT`` (none given: a link appended by ``flag_many`` with no
#: text keeps the one before it), or ``LONG``: a varint follows, even for
#: a text of 6 bytes and more (twice its length past 6; the text follows),
#: odd for a text kept once in ``waiting_text`` (twice its id, plus one;
#: format 10)
NO_TEXT = 6
LONG = 7


def decode_links(data: bytes, cleared: int = 0) -> Links:
    """A chunk's links (see SQLiteWaiting) in their pages' order, a page
    appended twice read as the two appends applied in turn, the bits
    ``cleared`` (the chunk's column) cleared from each and the links left
    with no flag dropped."""
    out: Links = {}
    at, end = 0, len(data)
    last: Any = None
    ordered = True
    while at < end:
        head = data[at]
        at += 1
        page: str | bytes
        if head & 16:
            size, at = read_varint(data, at)
            page = data[at : at + size].decode("utf-8", "surrogatepass")
            at += size
        else:
            page = data[at : at + 3]
            at += 3
        size = head >> 5
        text: bytes | int | None
        if size == NO_TEXT:
            text = None
        elif size == LONG:
            more, at = read_varint(data, at)
            if more & 1:
                text = more >> 1  # a text's id in waiting_text
            else:
                size = 6 + (more >> 1)
                text = data[at : at + size]
                at += size
        else:
            text = data[at : at + size]
            at += size
        old = out.get(page)
        if old is None:
            out[page] = [head & 15, b"" if text is None else text]
            if ordered and last is not None and code_order(page) < code_order(last):
                ordered = False
            last = page
        else:
            old[0] |= head & 15
            if text is not None:
                old[1] = text
    if cleared:
        kept = ~cleared
        for page in [page for page, link in out.items() if not link[0] & kept]:
            del out[page]
        for link in out.values():
            link[0] &= kept
    if not ordered:
        out = {page: out[page] for page in sorted(out, key=code_order)}
    return out


def link_bytes(out: bytearray, page: Any, flags: int, text: bytes | int | None) -> None:
    """Append a link to a chunk's bytes ``out`` (``text``: its UTF-8, or
    its id in ``waiting_text``)."""
    if text is None:
        size = NO_TEXT
    elif isinstance(text, int):
        size = LONG
    else:
        size = len(text)
        if size > 5:
            size = LONG
    if type(page) is bytes:
        out.append(flags | size << 5)
        out += page
    else:
        raw = page.encode("utf-8", "surrogatepass")
        out.append(flags | 16 | size << 5)
        put_varint(out, len(raw))
        out += raw
    if isinstance(text, int):
        put_varint(out, text << 1 | 1)
    elif text is not None:
        if size == LONG:
            put_varint(out, len(text) - 6 << 1)
        out += text


def encode_links(links: Links, chunk_bytes: int) -> list[tuple[Any, int, bytes]]:
    """``links`` (in order) as one chunk, or in chunks half full when they
    pass ``chunk_bytes`` (SQLiteWaiting's CHUNK_BYTES; room for the links
    appended next): (first page, flags, bytes) each, in order. A chunk
    rewritten smaller is never split: a caller iterating over the chunks
    does not meet its links again."""
    encoded = []
    total = 0
    for page, (flags, text) in links.items():
        out = bytearray()
        link_bytes(out, page, flags, text)
        encoded.append((page, flags, out))
        total += len(out)
    limit = chunk_bytes // 2 if total > chunk_bytes else total
    chunks: list[tuple[Any, int, bytes]] = []
    data = bytearray()
    first: Any = None
    union = 0
    for page, flags, out in encoded:
        if data and len(data) + len(out) > limit:
            chunks.append((first, union, bytes(data)))
            data = bytearray()
            union = 0
        if not data:
            first = page
        data += out
        union |= flags
    if data:
        chunks.append((first, union, bytes(data)))
    return chunks


def clear_links(data: bytes, bits: int) -> bytes | None:
    """A chunk's bytes with ``bits`` cleared from each link and the links
    left with no flag dropped; None when a page is in it twice (a link's
    text may then be another entry's: the caller decodes)."""
    out = bytearray()
    seen = set()
    at, end = 0, len(data)
    while at < end:
        start = at
        head = data[at]
        at += 1
        if head & 16:
            size, at = read_varint(data, at)
            page = data[at : at + size]
            at += size
        else:
            page = data[at : at + 3]
            at += 3
        if page in seen:
            return None
        seen.add(page)
        size = head >> 5
        if size == LONG:
            more, at = read_varint(data, at)
            if not more & 1:
                at += 6 + (more >> 1)
        elif size != NO_TEXT:
            at += size
        flags = head & 15 & ~bits
        if flags:
            out.append(head & ~15 | flags)
            out += data[start + 1 : at]
    return bytes(out)


def materialise(data: bytes, cleared: int) -> bytes:
    """``wl_clear``: a chunk's bytes with its ``cleared`` bits applied (the
    links they leave with no flag dropped, a page appended twice merged)."""
    found = clear_links(data, cleared)
    if found is not None:
        return found
    out = bytearray()
    for page, (flags, text) in decode_links(data, cleared).items():
        link_bytes(out, page, flags, text)
    return bytes(out)


def group_target(prefix: str) -> str | bytes:
    """The stored target of a group's prefix ``"<target>\\n"``."""
    if prefix.find("\n") != len(prefix) - 1:
        raise ValueError(
            f"{prefix!r}: a prefix of links.waiting is empty or <target>\\n"
        )
    return pack_code(prefix[:-1])


def encode_link(page: Any, flags: int, text: bytes | int | None) -> bytes:
    out = bytearray()
    link_bytes(out, page, flags, text)
    return bytes(out)


def entry_of(value: Any) -> tuple[int, bytes]:
    bits = flags_of(value)
    if not bits:
        raise ValueError(f"links.waiting holds flagged records only, not {value!r}")
    return bits, flag_text(value).encode("utf-8", "surrogatepass")
