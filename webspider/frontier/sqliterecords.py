"""Records (webspider.records) in the embedded crawl state's SQLite file.

Layout, beside the tables of webspider.frontier.sqlite::

    namespace(id INTEGER PRIMARY KEY, name TEXT UNIQUE)
    record(ns INTEGER, key TEXT, value TEXT,  -- value: JSON
           PRIMARY KEY (ns, key)) WITHOUT ROWID

The tables are created when a state is opened, so a state written before
they existed gains them (the format does not change). Writes go into the
state's open transaction: they are committed with the acknowledgements.

Read cache. A page's links are looked up in the features' namespaces (where
the mirror stored a URL, a link's outcome), and most links of a page are the
ones every page repeats (navigation, index, footer). So each namespace keeps
the stored text (or its absence) of the last keys it read or wrote, at most
``CACHE_MAX`` of them (emptied when full: no per-hit bookkeeping), and asks
the file only for the rest. The crawl process is the state's only writer,
and every write goes through here and updates or forgets what it changes,
so the cache never disagrees with the file. Values are decoded again on
every read: a caller may change what it got.

Pure: standard library only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Iterator, Mapping, Sequence

SCHEMA = """
CREATE TABLE IF NOT EXISTS namespace (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS record (
    ns INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (ns, key)
) WITHOUT ROWID;
"""

#: rows read per query while iterating
_PAGE = 512
_SELECT_IN = "SELECT key, value FROM record WHERE ns = ? AND key IN"
#: keys a namespace's read cache holds at most (about 250 bytes each)
CACHE_MAX = 2048
#: keys looked up in one query
_BATCH = 500

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_json_loads = json.loads
#: the small integers features keep as states (a ledger reads one per link)
#: read without the JSON decoder's overhead
_SMALL = {str(i): i for i in range(10)}


def _loads(value: str) -> Any:
    small = _SMALL.get(value)
    return small if small is not None else _json_loads(value)


def namespace_id(db: sqlite3.Connection, name: str) -> int:
    """The id of namespace ``name``, created when new."""
    row = db.execute("SELECT id FROM namespace WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return int(row[0])
    cursor = db.execute("INSERT INTO namespace (name) VALUES (?)", (name,))
    assert cursor.lastrowid is not None
    return int(cursor.lastrowid)


def _after(prefix: str) -> str | None:
    """The smallest string greater than every string starting with
    ``prefix`` (None: there is none below the last code point)."""
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return None
    return stripped[:-1] + chr(ord(stripped[-1]) + 1)


class SQLiteRecords:
    """One namespace of records (webspider.records.Records) in ``db``."""

    __slots__ = ("_cache", "_db", "_ns", "name")

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self._db = db
        self.name = name
        self._ns = namespace_id(db, name)
        #: key → stored text, None when absent (see the module docstring)
        self._cache: dict[str, str | None] = {}

    def _remember(self, key: str, text: str | None) -> None:
        cache = self._cache
        if len(cache) >= CACHE_MAX:
            cache.clear()
        cache[key] = text

    def get(self, key: str) -> Any | None:
        cache = self._cache
        if key in cache:
            text = cache[key]
        else:
            row = self._db.execute(
                "SELECT value FROM record WHERE ns = ? AND key = ?", (self._ns, key)
            ).fetchone()
            text = None if row is None else row[0]
            self._remember(key, text)
        return None if text is None else _loads(text)

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        cache = self._cache
        missing = [key for key in keys if key not in cache]
        if missing:
            found: dict[str, str] = {}
            for start in range(0, len(missing), _BATCH):
                chunk = missing[start : start + _BATCH]
                marks = ",".join("?" * len(chunk))
                query = (
                    f"SELECT key, value FROM record WHERE ns = ? AND key IN ({marks})"
                )
                found.update(self._db.execute(query, (self._ns, *chunk)))
            if len(cache) + len(missing) > CACHE_MAX:
                # full: answer from what was read and held, then start over
                texts = {key: cache.get(key) for key in keys}
                texts.update((key, found.get(key)) for key in missing)
                cache.clear()
                for key in missing[:CACHE_MAX]:
                    cache[key] = texts[key]
                return [
                    None if (v := texts[key]) is None else _loads(v) for key in keys
                ]
            for key in missing:
                cache[key] = found.get(key)
        return [None if (v := cache[key]) is None else _loads(v) for key in keys]

    def put(self, key: str, value: Any) -> None:
        text = _dumps(value)
        self._db.execute(
            "INSERT OR REPLACE INTO record (ns, key, value) VALUES (?, ?, ?)",
            (self._ns, key, text),
        )
        self._remember(key, text)

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        ns = self._ns
        rows = [(ns, key, _dumps(value)) for key, value in items]
        self._db.executemany(
            "INSERT OR REPLACE INTO record (ns, key, value) VALUES (?, ?, ?)", rows
        )
        cache = self._cache
        for _, key, _text in rows:
            cache.pop(key, None)

    def put_new(self, key: str, value: Any) -> bool:
        text = _dumps(value)
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO record (ns, key, value) VALUES (?, ?, ?)",
            (self._ns, key, text),
        )
        if cursor.rowcount > 0:
            self._remember(key, text)
            return True
        return False

    def put_new_many(self, items: Sequence[tuple[str, Any]]) -> list[bool]:
        # one transaction already: the embedded state commits them together
        return [self.put_new(key, value) for key, value in items]

    def incr_many(self, counts: Mapping[str, int]) -> dict[str, int]:
        return {key: self.incr(key, by) for key, by in counts.items()}

    def incr(self, key: str, by: int = 1) -> int:
        (value,) = self._db.execute(
            "INSERT INTO record (ns, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (ns, key) DO UPDATE SET value = CAST(value AS INTEGER) + ? "
            "RETURNING value",
            (self._ns, key, str(by), by),
        ).fetchone()
        self._cache.pop(key, None)
        return int(value)

    def delete(self, keys: Iterable[str]) -> None:
        ns = self._ns
        keys = list(keys)
        self._db.executemany(
            "DELETE FROM record WHERE ns = ? AND key = ?", [(ns, key) for key in keys]
        )
        cache = self._cache
        for key in keys:
            cache.pop(key, None)

    def delete_prefix(self, prefix: str) -> None:
        # one statement over the key range: nothing read, nothing decoded
        where, args = self._range(prefix)
        self._db.execute(f"DELETE FROM record WHERE {where}", args)
        self._cache.clear()

    def _range(self, prefix: str) -> tuple[str, tuple[Any, ...]]:
        end = _after(prefix)
        if end is None:
            return "ns = ? AND key >= ?", (self._ns, prefix)
        return "ns = ? AND key >= ? AND key < ?", (self._ns, prefix, end)

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        where, args = self._range(prefix)
        query = (
            f"SELECT key, value FROM record WHERE {where} AND key > ? "
            f"ORDER BY key LIMIT {_PAGE}"
        )
        last: str | None = None
        # the first page includes the prefix itself as a key
        rows = self._db.execute(
            f"SELECT key, value FROM record WHERE {where} ORDER BY key LIMIT {_PAGE}",
            args,
        ).fetchall()
        while rows:
            for key, value in rows:
                yield key, _loads(value)
            last = rows[-1][0]
            if len(rows) < _PAGE:
                return
            rows = self._db.execute(query, (*args, last)).fetchall()

    def count(self, prefix: str = "") -> int:
        where, args = self._range(prefix)
        (n,) = self._db.execute(
            f"SELECT COUNT(*) FROM record WHERE {where}",
            args,
        ).fetchone()
        return int(n)

    def clear(self) -> None:
        self._db.execute("DELETE FROM record WHERE ns = ?", (self._ns,))
        self._cache.clear()
