"""Records (webspider.records) in the embedded crawl state's SQLite file.

Layout, beside the tables of webspider.frontier.sqlite::

    namespace(id INTEGER PRIMARY KEY, name TEXT UNIQUE)
    record(key TEXT PRIMARY KEY,  -- chr(namespace.id) + the record's key
           value) WITHOUT ROWID   -- value: see below
    waiting(target, first, flags, cleared, links,  -- links.waiting only,
            PRIMARY KEY (target, first)) WITHOUT ROWID  -- packed: sqlitewaiting
    waiting_text(id INTEGER PRIMARY KEY, text)  -- its texts met again (format 10)

The tables are created when a state is opened. Writes go into the state's
open transaction: they are committed with the acknowledgements.

Keys. A record's key is stored behind one character, its namespace's id
(``chr(id)``: one byte for the first 127 namespaces), rather than in a
column of its own: a row is then its key, its value and a header of 3
bytes, where the namespace column cost a byte of header and a byte of
value (format 2) — a byte less on each of the ~20 rows a URL a crawl holds
at its peak (most are links waiting for their target: ~25 bytes each).
Keys keep their order within a namespace (the prefix is the same), so
``items`` and the range deletes work as before.

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

Read cache. A page's links are looked up in the features' namespaces (where
the mirror stored a URL, a link's outcome), and most links of a page are the
ones every page repeats (navigation, index, footer). So each namespace keeps
the stored text (or its absence) of the keys it read or wrote lately, and
asks the file only for the rest. Two generations: a key is looked up in the
young one, then in the old one (and moved to the young one); when the young
one holds ``CACHE_MAX`` keys it becomes the old one and the former old one
is dropped. So the keys every page asks for stay, however many others pass
through, for the price of a second dict lookup on a miss (emptying the one
dict when full, as before, made every page after that read the navigation
again: two thirds of the keys asked were read from the file). The crawl
process is the state's only writer, and every write goes through here and
updates or forgets what it changes, so the cache never disagrees with the
file. Values are decoded again on every read: a caller may change what it
got.

Known keys. A namespace that holds at most ``KNOWN_MAX`` keys when it is
opened (a fresh crawl's: all of them, at first) keeps the set of its keys in
memory while it stays that small, for the same reason (the only writer):
a key not in it is absent without a query. Most lookups of a few
namespaces are of absent keys (``mirror.alias``: every link the mirror
has no file for is looked up there; most crawls have few redirects).

Flags written behind. ``flag_many`` holds its rows (merged by key: the
bits ORed, the last text given) until the state commits
(``SQLiteState.commit`` calls ``write_flags``), or until anything else
reads or writes the namespace — a range operation on groups
(``unflag_prefix(es)``, ``delete_prefix`` of ``"<head>\\n"``), and a read
of ``links.waiting``'s keys (the broken-link report's look-up of a page's
links to targets already broken), writes only the held rows of those
groups, which are the only ones it could see. So
what every call sees is what it saw when each row was written at once,
and what is committed is the same, in the same transaction; but a row two
features flag before a commit (a link that waits for its outcome in the
broken-link report and for its file in the mirror: ``links.waiting``) is
one INSERT, not an INSERT and an UPDATE of the row just inserted (about
as costly: a B-tree search and a row written each). At most
``FLAGS_HELD`` rows are held.

Puts written behind. ``put`` holds its row too (its stored text, by key,
the last one given) until the state commits (``write_flags`` writes them
first), or until anything but a read of keys, ``put_new`` or another
``put`` meets the namespace; ``get`` and ``get_many`` answer a held key
from it. The mirror's index record is one ``put`` a page, and one
``executemany`` of a commit's rows costs less than an ``execute`` each
(bench/README.md, "The mirror's work a page, third pass"). What is read
and committed is what it was; at most ``PUTS_HELD`` rows are held, and at
any moment only puts or only flags are (each kind writes the other's
first), so the order of the writes to a key is kept.

Pure: standard library only.
"""

from __future__ import annotations

import json
from binascii import Error as BinasciiError
from binascii import a2b_base64, b2a_base64
from json.scanner import make_scanner
from typing import TYPE_CHECKING, Any

from webspider.frontier.packedlists import MARK as PACKED_MARK
from webspider.frontier.packedlists import pack, unpack
from webspider.records import FLAGS_MAX, check_bits, flagged

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Iterator, Mapping, Sequence, Set

SCHEMA = """
CREATE TABLE IF NOT EXISTS namespace (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS record (
    key TEXT NOT NULL PRIMARY KEY,
    value NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS waiting (
    target NOT NULL,
    first NOT NULL,
    flags INTEGER NOT NULL,
    cleared INTEGER NOT NULL DEFAULT 0,
    links BLOB NOT NULL,
    PRIMARY KEY (target, first)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS waiting_text (
    id INTEGER PRIMARY KEY,
    text BLOB NOT NULL
);
"""

#: rows read per query while iterating
_PAGE = 512
#: keys a generation of a namespace's read cache holds (about 250 bytes
#: each; two generations)
CACHE_MAX = 2048
#: keys looked up in one query
_BATCH = 500


def in_marks(values: list[Any]) -> tuple[str, list[Any]]:
    """The ``?, ?, …`` of an ``IN (…)`` list of ``values``, and the values,
    both padded with NULLs (which match nothing) up to the next power of two.

    SQLite prepares one statement for each text, and Python's sqlite3 keeps
    the last 128: lists of every length from 1 to 500 kept ~3.5 MB of the
    crawl's memory in statements (bench/README.md, "Peak RSS against plain
    Scrapy's, per process"). Ten lengths keep a tenth of that."""
    size = 1 << (len(values) - 1).bit_length()
    return ",".join("?" * size), values + [None] * (size - len(values))


#: keys a namespace keeps in memory at most (see "Known keys")
KNOWN_MAX = 1024
#: flagged rows held at most before they are written (see "Flags written
#: behind")
FLAGS_HELD = 8192
#: rows ``put`` holds at most before they are written (see "Puts written
#: behind")
PUTS_HELD = 1024

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


def _encode(value: Any) -> str | bytes | int:
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


def _loads(value: str | bytes | int) -> Any:
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


#: a flagged record's first character, and its value with no text, by bits
_HEADS = {bits: flagged(bits) for bits in range(1, FLAGS_MAX + 1)}
_FLAGGED = {bits: head.encode() for bits, head in _HEADS.items()}
#: a flagged record's flags (its value's first character, see
#: webspider.records), in SQL, of the stored ``value``
_FLAGS = "(unicode(CAST(value AS TEXT)) - 48)"
#: the row keeps no flag once the bits ``?`` are cleared
_EMPTIED = f"{_FLAGS} & ~? = 0"
#: the value with the bits ``?`` cleared
_CLEARED = f"CAST(char(({_FLAGS} & ~?) + 48) || substr(value, 2) AS BLOB)"
#: ``flag_many``: set the new value's flags, keep the old text or take the new
_FLAG = (
    "INSERT INTO record (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
    f"SET value = CAST(char(({_FLAGS} | (unicode(CAST(excluded.value AS TEXT)) "
    "- 48)) + 48) || substr(value, 2) AS BLOB)"
)
_FLAG_TEXT = (
    "INSERT INTO record (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
    f"SET value = CAST(char(({_FLAGS} | (unicode(CAST(excluded.value AS TEXT)) "
    "- 48)) + 48) || substr(excluded.value, 2) AS BLOB)"
)


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


class _HeldFlags:
    """``flag_many``'s rows held until ``write_flags`` (see "Flags written
    behind" in the module docstring), shared by the two stores of flagged
    records; each writes them to its own table."""

    __slots__ = ("_flags",)

    _flags: dict[str, list[Any]]

    def write_flags(self, within: Set[str] | None = None) -> None:
        raise NotImplementedError

    def flag_many(self, items: Iterable[tuple[str, int, str | None]]) -> None:
        # held: a row two features flag before the commit is written once,
        # with both bits
        items = list(items)
        for bits in {bits for _key, bits, _text in items}:
            check_bits(bits)  # before anything is held
        held = self._flags
        for key, bits, text in items:
            row = held.get(key)
            if row is None:
                held[key] = [bits, text]
            else:
                row[0] |= bits
                if text is not None:
                    row[1] = text
        if len(held) >= FLAGS_HELD:
            self.write_flags()

    def _take_flags(self, within: Set[str] | None) -> dict[str, list[Any]]:
        """The held rows to write now, no longer held: all of them, or those
        whose key's group, ``"<head>\\n"``, is in ``within``."""
        held = self._flags
        if within is None or not held:
            self._flags = {}
            return held
        # a group has its one newline at its end, so a key is in it when its
        # first len(group) characters are the group: one slice a length of
        # the groups (nearly always one: 4-character codes), not a search
        # for the key's newline (every held key is looked at, at each
        # target's range cleared: ~2,000 a commit)
        sizes = {len(group) for group in within}
        if len(sizes) == 1:
            [size] = sizes
            taken = [key for key in held if key[:size] in within]
        else:
            taken = [key for key in held if any(key[:size] in within for size in sizes)]
        return {key: held.pop(key) for key in taken}

    def _write_flags_in(self, prefixes: Iterable[str]) -> None:
        """Write the held rows in the key ranges of ``prefixes`` (all of
        them, unless each prefix is a group: ``"<head>\\n"``, one newline)."""
        if not self._flags:
            return
        groups: set[str] = set()
        for prefix in prefixes:
            if not prefix or prefix.find("\n") != len(prefix) - 1:
                self.write_flags()
                return
            groups.add(prefix)
        self.write_flags(groups)


class SQLiteRecords(_HeldFlags):
    """One namespace of records (webspider.records.Records) in ``db``."""

    __slots__ = ("_db", "_known", "_ns", "_old", "_puts", "_table", "_young", "name")

    def __init__(
        self, db: sqlite3.Connection, name: str, table: str = "record"
    ) -> None:
        self._db = db
        self.name = name
        #: the table of its rows (the shared ``record``, or one of its own:
        #: SQLiteHashed)
        self._table = table
        ns = namespace_id(db, name)
        if not 0 < ns < 0xD800:
            raise ValueError(f"namespace id {ns} out of range")
        #: what the namespace's keys start with in the table
        self._ns = chr(ns)
        #: key → stored text, None when absent (see the module docstring)
        self._young: dict[str, str | bytes | int | None] = {}
        self._old: dict[str, str | bytes | int | None] = {}
        #: every key of the namespace, while it has few (see the docstring)
        self._known: set[str] | None = None
        #: flag_many's rows not written yet: key → [bits, text] (see
        #: "Flags written behind" in the module docstring)
        self._flags: dict[str, list[Any]] = {}
        #: put's rows not written yet: key → stored text (see "Puts written
        #: behind")
        self._puts: dict[str, str | bytes | int] = {}
        where, args = self._range("")
        keys = db.execute(
            f"SELECT key FROM {table} WHERE {where} LIMIT ?", (*args, KNOWN_MAX + 1)
        ).fetchall()
        if len(keys) <= KNOWN_MAX:
            self._known = {self._unpack(key) for (key,) in keys}

    def _pack(self, key: str) -> str | bytes:
        """``key`` as the table stores it."""
        return self._ns + key

    def _unpack(self, stored: str | bytes) -> str:
        """The key of a stored one."""
        return str(stored)[1:]

    def _added(self, keys: Iterable[str]) -> None:
        known = self._known
        if known is not None:
            known.update(keys)
            if len(known) > KNOWN_MAX:
                self._known = None  # for good: it may grow past any bound

    def _remember(self, key: str, text: str | bytes | int | None) -> None:
        young = self._young
        if len(young) >= CACHE_MAX:
            self._old = young
            young = self._young = {}
        young[key] = text
        self._old.pop(key, None)

    def _forget(self, key: str) -> None:
        self._young.pop(key, None)
        self._old.pop(key, None)

    def _forget_all(self) -> None:
        self._young.clear()
        self._old.clear()

    def get(self, key: str) -> Any | None:
        if self._flags:
            self.write_flags()
        young = self._young
        if key in young:
            text = young[key]
        else:
            old = self._old
            known = self._known
            if key in old:
                text = old.pop(key)
            elif known is not None and key not in known:
                text = None
            elif key in self._puts:
                text = self._puts[key]
            else:
                row = self._db.execute(
                    f"SELECT value FROM {self._table} WHERE key = ?",
                    (self._pack(key),),
                ).fetchone()
                text = None if row is None else row[0]
            self._remember(key, text)
        return None if text is None else _loads(text)

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        if self._flags:
            self.write_flags()
        young, old = self._young, self._old
        missing: list[str] = []
        for key in keys:
            if key not in young:
                if key in old:
                    young[key] = old.pop(key)
                else:
                    missing.append(key)
        known = self._known
        if missing and known is not None:
            for key in missing:
                if key not in known:
                    young[key] = None
            missing = [key for key in missing if key in known]
        if missing and self._puts:
            held = self._puts
            for key in missing:
                if key in held:
                    young[key] = held[key]
            missing = [key for key in missing if key not in held]
        if missing:
            pack = self._pack
            stored = [pack(key) for key in missing]
            found: dict[str | bytes, str | bytes | int] = {}
            table = self._table
            for start in range(0, len(stored), _BATCH):
                marks, args = in_marks(stored[start : start + _BATCH])
                query = f"SELECT key, value FROM {table} WHERE key IN ({marks})"
                found.update(self._db.execute(query, args))
            for key, as_stored in zip(missing, stored, strict=True):
                young[key] = found.get(as_stored)
        answer = [None if (v := young[key]) is None else _loads(v) for key in keys]
        if len(young) >= CACHE_MAX:
            # this page's keys are the young generation's first (a page
            # asking for more than a generation holds leaves only those)
            self._old = young if len(young) < 2 * CACHE_MAX else {}
            self._young = {}
        return answer

    def put(self, key: str, value: Any) -> None:
        if self._flags:
            self.write_flags()
        text = _encode(value)
        puts = self._puts
        puts[key] = text  # held (see "Puts written behind")
        self._remember(key, text)
        if self._known is not None:
            self._added((key,))
        if len(puts) >= PUTS_HELD:
            self._write_puts()

    def _write_puts(self) -> None:
        """Write the rows ``put`` holds."""
        puts = self._puts
        if not puts:
            return
        self._puts = {}
        pack = self._pack
        self._db.executemany(
            f"INSERT OR REPLACE INTO {self._table} (key, value) VALUES (?, ?)",
            [(pack(key), text) for key, text in puts.items()],
        )

    def _write_held(self) -> None:
        """Write every row ``put`` and ``flag_many`` hold: before an
        operation that is not a read by key (the module docstring's "Flags
        written behind" and "Puts written behind")."""
        if self._flags or self._puts:
            self.write_flags()  # the puts first

    def flag_many(self, items: Iterable[tuple[str, int, str | None]]) -> None:
        if self._puts:
            self._write_puts()
        super().flag_many(items)

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        self._write_held()
        pack = self._pack
        rows = [(key, _encode(value)) for key, value in items]
        self._db.executemany(
            f"INSERT OR REPLACE INTO {self._table} (key, value) VALUES (?, ?)",
            [(pack(key), text) for key, text in rows],
        )
        # what the cache holds is brought up to date (the ledger reads again
        # the states it wrote); what it does not hold is not added
        young, old = self._young, self._old
        for key, text in rows:
            if key in young:
                young[key] = text
            elif key in old:
                old[key] = text
        if self._known is not None:
            self._added([key for key, _text in rows])

    def put_new(self, key: str, value: Any) -> bool:
        if self._flags:
            self.write_flags()
        if key in self._puts:  # its row is written already, in effect
            return False
        text = _encode(value)
        cursor = self._db.execute(
            f"INSERT OR IGNORE INTO {self._table} (key, value) VALUES (?, ?)",
            (self._pack(key), text),
        )
        if cursor.rowcount > 0:
            self._remember(key, text)
            if self._known is not None:
                self._added((key,))
            return True
        return False

    def put_new_many(self, items: Sequence[tuple[str, Any]]) -> list[bool]:
        # one transaction already: the embedded state commits them together
        return [self.put_new(key, value) for key, value in items]

    def incr_many(self, counts: Mapping[str, int]) -> dict[str, int]:
        return {key: self.incr(key, by) for key, by in counts.items()}

    def incr(self, key: str, by: int = 1) -> int:
        self._write_held()
        (value,) = self._db.execute(
            f"INSERT INTO {self._table} (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + ? "
            "RETURNING value",
            (self._pack(key), by, by),
        ).fetchone()
        self._forget(key)
        if self._known is not None:
            self._added((key,))
        return int(value)

    def delete(self, keys: Iterable[str]) -> None:
        self._write_held()
        pack = self._pack
        keys = list(keys)
        self._db.executemany(
            f"DELETE FROM {self._table} WHERE key = ?", [(pack(key),) for key in keys]
        )
        known = self._known
        for key in keys:
            self._forget(key)
            if known is not None:
                known.discard(key)

    def write_flags(self, within: Set[str] | None = None) -> None:
        """Write the rows ``flag_many`` holds (those whose key's group,
        ``"<head>\\n"``, is in ``within``, when given), and those ``put``
        holds (all of them)."""
        if self._puts:
            self._write_puts()
        rows = self._take_flags(within)
        if not rows:
            return
        ns = self._ns
        texts: list[tuple[str, bytes]] = []
        bare: list[tuple[str, bytes]] = []
        for key, (bits, text) in rows.items():
            if text is None:
                bare.append((ns + key, _FLAGGED[bits]))
            else:
                value = (_HEADS[bits] + text).encode("utf-8", "surrogatepass")
                texts.append((ns + key, value))
        # The flags are the value's first byte (ASCII); both groups only OR
        # bits in, and only the first sets texts: their order does not matter.
        if texts:
            self._db.executemany(_FLAG_TEXT, texts)
        if bare:
            self._db.executemany(_FLAG, bare)
        young, old = self._young, self._old
        if young or old:
            for key in rows:
                young.pop(key, None)
                old.pop(key, None)
        if self._known is not None:
            self._added(rows)

    def unflag(self, keys: Iterable[str], bits: int) -> None:
        self._write_held()
        check_bits(bits)
        ns = self._ns
        stored = [(ns + key,) for key in keys]
        self._db.executemany(
            f"DELETE FROM record WHERE key = ? AND {_EMPTIED}",
            [(k, bits) for (k,) in stored],
        )
        self._db.executemany(
            f"UPDATE record SET value = {_CLEARED} WHERE key = ? AND {_FLAGS} & ? != 0",
            [(bits, k, bits) for (k,) in stored],
        )
        for (key,) in stored:
            self._forget(key[1:])

    def unflag_prefix(self, prefix: str, bits: int) -> None:
        check_bits(bits)
        if self._puts:
            self._write_puts()
        self._write_flags_in((prefix,))
        where, args = self._range(prefix)
        self._db.execute(
            f"DELETE FROM record WHERE {where} AND {_EMPTIED}", (*args, bits)
        )
        self._db.execute(
            f"UPDATE record SET value = {_CLEARED} WHERE {where} AND {_FLAGS} & ? != 0",
            (bits, *args, bits),
        )
        self._forget_all()

    def unflag_prefixes(self, prefixes: Sequence[str], bits: int) -> None:
        # two statements for all (a commit clears the ranges of every page
        # fetched since the last one), not two a prefix
        check_bits(bits)
        if not prefixes:
            return
        if self._puts:
            self._write_puts()
        self._write_flags_in(prefixes)
        ranges: list[tuple[str, str]] = []
        for prefix in prefixes:
            start = self._ns + prefix
            end = _after(start)
            if end is None:  # never (a key starts with its namespace's id)
                self.unflag_prefix(prefix, bits)
            else:
                ranges.append((start, end))
        self._db.executemany(
            f"DELETE FROM record WHERE key >= ? AND key < ? AND {_EMPTIED}",
            [(start, end, bits) for start, end in ranges],
        )
        self._db.executemany(
            "UPDATE record SET value = "
            f"{_CLEARED} WHERE key >= ? AND key < ? AND {_FLAGS} & ? != 0",
            [(bits, start, end, bits) for start, end in ranges],
        )
        self._forget_all()

    def delete_prefix(self, prefix: str) -> None:
        # one statement over the key range: nothing read, nothing decoded
        if self._puts:
            self._write_puts()
        self._write_flags_in((prefix,))
        where, args = self._range(prefix)
        self._db.execute(f"DELETE FROM {self._table} WHERE {where}", args)
        self._forget_all()
        if self._known is not None:
            self._known = {key for key in self._known if not key.startswith(prefix)}

    def _range(self, prefix: str) -> tuple[str, tuple[Any, ...]]:
        start = self._ns + prefix
        end = _after(start)
        if end is None:
            return "key >= ?", (start,)
        return "key >= ? AND key < ?", (start, end)

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        where, args = self._range(prefix)
        # the next pages start after the last key read, their only lower
        # bound: SQLite seeks the primary key by one lower bound and filters
        # by the others, so ``key >= <prefix> AND key > <last>`` read every
        # row from the prefix again for each page (quadratic: 200,000 rows
        # in 6.4 s against 0.24 s)
        end = args[1:]
        table = self._table
        query = (
            f"SELECT key, value FROM {table} WHERE key > ?"
            f"{' AND key < ?' if end else ''} ORDER BY key LIMIT {_PAGE}"
        )
        self._write_held()
        # the first page includes the prefix itself as a key
        rows = self._db.execute(
            f"SELECT key, value FROM {table} WHERE {where} ORDER BY key LIMIT {_PAGE}",
            args,
        ).fetchall()
        unpack = self._unpack
        while rows:
            for key, value in rows:
                yield unpack(key), _loads(value)
            if len(rows) < _PAGE:
                return
            self._write_held()  # put or flagged while the caller iterates
            rows = self._db.execute(query, (rows[-1][0], *end)).fetchall()

    def count(self, prefix: str = "") -> int:
        self._write_held()
        where, args = self._range(prefix)
        (n,) = self._db.execute(
            f"SELECT COUNT(*) FROM {self._table} WHERE {where}",
            args,
        ).fetchone()
        return int(n)

    def clear(self) -> None:
        self._flags = {}  # written, they would be deleted
        self._puts = {}
        where, args = self._range("")
        self._db.execute(f"DELETE FROM {self._table} WHERE {where}", args)
        self._forget_all()
        self._known = set()


# -- namespaces keyed by hashes: tables of their own, keys as bytes ----------------
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
