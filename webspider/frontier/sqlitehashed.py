"""The namespaces of records keyed by hashes (``HASHED``: URL ids and codes,
content hashes) in tables of their own in the embedded crawl state's SQLite
file, their keys stored as the bytes the base64 stands for
(``SQLiteHashed``; state format 9).

Apart from webspider.frontier.sqliterecords because it is one kind of
namespace with its own key encoding and its own tables, built on the
general store (a subclass: the rows' cache and writes are that store's).

Pure: standard library only.
"""

from __future__ import annotations

from binascii import Error as BinasciiError
from binascii import a2b_base64, b2a_base64
from typing import TYPE_CHECKING, Any

from webspider.frontier.sqliterecords import SQLiteRecords

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Sequence, Set

#: the namespaces whose keys are hashes in base64 (a URL's id or code,
#: webspider.utils.urlcodes; a content hash, webspider.reports.duplicates,
#: behind its kind's initial): name → (characters kept before the base64,
#: whether it is URL-safe base64). tests/test_frontier_sqlite.py checks the
#: names against the features' constants (which live on floors above this one)
HASHED = {
    "reports.link_states": (0, False),
    "mirror.paths": (0, False),
    "urls.codes": (0, True),
    "reports.pages": (0, True),
    "reports.content": (1, False),
}
#: URL-safe base64 → standard (and the standard characters it never uses →
#: one standard base64 refuses, so that such a key is stored as text)
_FROM_URLSAFE = str.maketrans("-_+/", "+/**")
_TO_URLSAFE = str.maketrans("+/", "-_")


def hashed_table(name: str) -> str:
    """The table of the hashed namespace ``name``."""
    return "hashed_" + name.replace(".", "_")


class SQLiteHashed(SQLiteRecords):
    """A namespace of ``HASHED`` (webspider.records.Records) in a table of
    its own, ``hashed_<name>(key PRIMARY KEY, value) WITHOUT ROWID``, its
    keys stored as the bytes their base64 stands for (a BLOB: 9 bytes for a
    12-character URL id, 3 for a 4-character code) and no namespace
    character before them: a quarter of the key and a byte less a row, on
    rows that are one a URL seen (``reports.link_states``, ``urls.codes``)
    or one a page (``mirror.paths``, ``reports.pages``, ``reports.content``).

    A key that is not exactly such base64 (its length not a multiple of 4
    — a URL code of 5 characters —, another character, padding) is stored
    as it is, a TEXT, which never equals a BLOB: every key reads back as it
    was written. What the features ask of these namespaces is what this
    keeps: a key's value, the whole namespace counted, listed or cleared.
    So a prefix must be ``""``, and ``items`` lists the keys in the order
    of their stored form (the text keys first, then by bytes), not as
    strings; there are no flagged records here (ValueError for each)."""

    __slots__ = ("_head", "_urlsafe")

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self._head, self._urlsafe = HASHED[name]
        table = hashed_table(name)
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {table} "
            "(key NOT NULL PRIMARY KEY, value NOT NULL) WITHOUT ROWID"
        )
        super().__init__(db, name, table)

    def _pack(self, key: str) -> str | bytes:
        head = self._head
        body = key[head:] if head else key
        if not body or len(body) & 3 or not key.isascii():
            return key
        if self._urlsafe:
            body = body.translate(_FROM_URLSAFE)
        try:
            raw = a2b_base64(body, strict_mode=True)
        except BinasciiError:
            return key
        if len(raw) * 4 != len(body) * 3:  # padding: not the bytes' one form
            return key
        return key[:head].encode("ascii") + raw if head else raw

    def _unpack(self, stored: str | bytes) -> str:
        if type(stored) is not bytes:
            return str(stored)
        head = self._head
        body = b2a_base64(stored[head:], newline=False).decode("ascii")
        if self._urlsafe:
            body = body.translate(_TO_URLSAFE)
        return stored[:head].decode("ascii") + body if head else body

    def _range(self, prefix: str) -> tuple[str, tuple[Any, ...]]:
        if prefix:
            raise ValueError(f"{self.name}: keys are hashes, no prefix but ''")
        return "1", ()

    def _no_flags(self) -> None:
        raise ValueError(f"{self.name}: keys are hashes, no flagged records")

    def flag_many(self, items: Iterable[tuple[str, int, str | None]]) -> None:
        self._no_flags()

    def unflag(self, keys: Iterable[str], bits: int) -> None:
        self._no_flags()

    def unflag_prefix(self, prefix: str, bits: int) -> None:
        self._no_flags()

    def unflag_prefixes(self, prefixes: Sequence[str], bits: int) -> None:
        self._no_flags()

    def write_flags(self, within: Set[str] | None = None) -> None:
        # no flags held (flag_many refuses), but puts may be
        if self._puts:
            self._write_puts()
