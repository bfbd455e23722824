"""How a record's value (webspider.records) is stored in the embedded crawl
state's SQLite file, and read back: ``encode_value`` and ``decode_value``,
used by every table of records (webspider.frontier.sqliterecords,
webspider.frontier.sqlitehashed).

Apart from the stores because it is the format of the ``value`` column,
not how rows are kept, cached or written; pure functions of one value.

Values. A string is stored as a BLOB of its UTF-8 bytes, an integer as an
SQLite integer, a list of integers, strings and Nones as a BLOB of its
packed bytes (webspider.frontier.packedlists, format 7: the first byte,
0xFF, is never UTF-8's; the mirror's index record, one a page, ~20 bytes
smaller than its JSON), anything else as JSON text: a BLOB is never a JSON
text, so they read back apart, and a string (a link's text, a URL) costs
neither the JSON encoder and decoder nor two quotes a row. The column has
no type (no affinity), so an integer stays one: ``0`` and ``1`` — the
mirror's waiting links, most link states — take no byte of the row at
all (SQLite's record format has a type for each), where their digit as
text took one. A state whose table declared the value TEXT (before
format 3) gets its integers back as digits, which are read as JSON.

Pure: standard library only.
"""

from __future__ import annotations

import json
from json.scanner import make_scanner
from typing import Any

from webspider.frontier.packedlists import MARK as PACKED_MARK
from webspider.frontier.packedlists import pack, unpack

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_json_loads = json.loads
#: the JSON decoder's scanner alone: a value as ``_dumps`` wrote it (no
#: whitespace around it) without ``json.loads``' layers (its type checks,
#: ``decode``, ``raw_decode``, the whitespace matches) — a third of the
#: time of a short record's decoding (the mirror's index records, read for
#: each link of a page that has a file); anything else is read by
#: ``json.loads``
_scan = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed
#: the small integers features keep as states (a ledger reads one per link)
#: read without the JSON decoder's overhead
_SMALL = {str(i): i for i in range(10)}
#: the integers SQLite stores as such (larger ones: JSON text)
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
#: a packed list's first byte (webspider.frontier.packedlists)
_PACKED = bytes([PACKED_MARK])


def encode_value(value: Any) -> str | bytes | int:
    kind = type(value)
    if kind is str:
        return bytes(value.encode("utf-8", "surrogatepass"))
    if kind is int and _INT_MIN <= value <= _INT_MAX:
        return int(value)
    if kind is list:
        packed = pack(value)
        if packed is not None:
            return packed
    return _dumps(value)


def decode_value(value: str | bytes | int) -> Any:
    if isinstance(value, int):
        return value
    if isinstance(value, bytes):
        if value[:1] == _PACKED:
            return unpack(value)
        return value.decode("utf-8", "surrogatepass")
    small = _SMALL.get(value)
    if small is not None:
        return small
    try:
        found, end = _scan(value, 0)
    except StopIteration:
        return _json_loads(value)  # its error
    return found if end == len(value) else _json_loads(value)
