"""Records (webspider.records) in the embedded crawl state's SQLite file.

Layout, beside the tables of webspider.frontier.sqlite::

    namespace(id INTEGER PRIMARY KEY, name TEXT UNIQUE)
    record(key TEXT PRIMARY KEY,  -- chr(namespace.id) + the record's key
           value) WITHOUT ROWID   -- value: see below

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
SQLite integer, anything else as JSON text: a BLOB is never a JSON text,
so the two read back apart, and a string (a link's text, a URL) costs
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
(``unflag_prefix(es)``, ``delete_prefix`` of ``"<head>\\n"``) writes only
the held rows of those groups, which are the only ones it could see. So
what every call sees is what it saw when each row was written at once,
and what is committed is the same, in the same transaction; but a row two
features flag before a commit (a link that waits for its outcome in the
broken-link report and for its file in the mirror: ``links.waiting``) is
one INSERT, not an INSERT and an UPDATE of the row just inserted (about
as costly: a B-tree search and a row written each). At most
``FLAGS_HELD`` rows are held.

Pure: standard library only.
"""

from __future__ import annotations

import json
from binascii import Error as BinasciiError
from binascii import a2b_base64, b2a_base64
from json.scanner import make_scanner
from typing import TYPE_CHECKING, Any

from webspider.records import FLAGS_MAX, check_bits, flag_text, flagged, flags_of

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
    page NOT NULL,
    value NOT NULL,
    PRIMARY KEY (target, page)
) WITHOUT ROWID;
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


def _encode(value: Any) -> str | bytes | int:
    kind = type(value)
    if kind is str:
        return bytes(value.encode("utf-8", "surrogatepass"))
    if kind is int and _INT_MIN <= value <= _INT_MAX:
        return int(value)
    return _dumps(value)


def _loads(value: str | bytes | int) -> Any:
    if isinstance(value, int):
        return value
    if isinstance(value, bytes):
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


class SQLiteRecords:
    """One namespace of records (webspider.records.Records) in ``db``."""

    __slots__ = ("_db", "_flags", "_known", "_ns", "_old", "_young", "name")

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self._db = db
        self.name = name
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
        where, args = self._range("")
        keys = db.execute(
            f"SELECT key FROM record WHERE {where} LIMIT ?", (*args, KNOWN_MAX + 1)
        ).fetchall()
        if len(keys) <= KNOWN_MAX:
            self._known = {key[1:] for (key,) in keys}

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
            else:
                row = self._db.execute(
                    "SELECT value FROM record WHERE key = ?", (self._ns + key,)
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
        if missing:
            found: dict[str, str | bytes | int] = {}
            ns = self._ns
            for start in range(0, len(missing), _BATCH):
                chunk = missing[start : start + _BATCH]
                marks, args = in_marks([ns + key for key in chunk])
                query = (
                    f"SELECT substr(key, 2), value FROM record WHERE key IN ({marks})"
                )
                found.update(self._db.execute(query, args))
            for key in missing:
                young[key] = found.get(key)
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
        self._db.execute(
            "INSERT OR REPLACE INTO record (key, value) VALUES (?, ?)",
            (self._ns + key, text),
        )
        self._remember(key, text)
        if self._known is not None:
            self._added((key,))

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        if self._flags:
            self.write_flags()
        ns = self._ns
        rows = [(key, _encode(value)) for key, value in items]
        self._db.executemany(
            "INSERT OR REPLACE INTO record (key, value) VALUES (?, ?)",
            [(ns + key, text) for key, text in rows],
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
        text = _encode(value)
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO record (key, value) VALUES (?, ?)",
            (self._ns + key, text),
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
        if self._flags:
            self.write_flags()
        (value,) = self._db.execute(
            "INSERT INTO record (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + ? "
            "RETURNING value",
            (self._ns + key, by, by),
        ).fetchone()
        self._forget(key)
        if self._known is not None:
            self._added((key,))
        return int(value)

    def delete(self, keys: Iterable[str]) -> None:
        if self._flags:
            self.write_flags()
        ns = self._ns
        keys = list(keys)
        self._db.executemany(
            "DELETE FROM record WHERE key = ?", [(ns + key,) for key in keys]
        )
        known = self._known
        for key in keys:
            self._forget(key)
            if known is not None:
                known.discard(key)

    def flag_many(self, items: Iterable[tuple[str, int, str | None]]) -> None:
        # held (see "Flags written behind"): a row two features flag before
        # the commit is written once, with both bits
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

    def write_flags(self, within: Set[str] | None = None) -> None:
        """Write the rows ``flag_many`` holds (those whose key's group,
        ``"<head>\\n"``, is in ``within``, when given)."""
        held = self._flags
        if not held:
            return
        if within is None:
            rows = held
            self._flags = {}
        else:
            rows = {}
            for key in list(held):
                newline = key.find("\n")
                if newline >= 0 and key[: newline + 1] in within:
                    rows[key] = held.pop(key)
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

    def unflag(self, keys: Iterable[str], bits: int) -> None:
        if self._flags:
            self.write_flags()
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
        self._write_flags_in((prefix,))
        where, args = self._range(prefix)
        self._db.execute(f"DELETE FROM record WHERE {where}", args)
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
        query = (
            f"SELECT key, value FROM record WHERE key > ?"
            f"{' AND key < ?' if end else ''} ORDER BY key LIMIT {_PAGE}"
        )
        if self._flags:
            self.write_flags()
        # the first page includes the prefix itself as a key
        rows = self._db.execute(
            f"SELECT key, value FROM record WHERE {where} ORDER BY key LIMIT {_PAGE}",
            args,
        ).fetchall()
        while rows:
            for key, value in rows:
                yield key[1:], _loads(value)
            if len(rows) < _PAGE:
                return
            if self._flags:  # flagged while the caller iterates
                self.write_flags()
            rows = self._db.execute(query, (rows[-1][0], *end)).fetchall()

    def count(self, prefix: str = "") -> int:
        if self._flags:
            self.write_flags()
        where, args = self._range(prefix)
        (n,) = self._db.execute(
            f"SELECT COUNT(*) FROM record WHERE {where}",
            args,
        ).fetchone()
        return int(n)

    def clear(self) -> None:
        self._flags = {}  # written, they would be deleted
        where, args = self._range("")
        self._db.execute(f"DELETE FROM record WHERE {where}", args)
        self._forget_all()
        self._known = set()


# -- links.waiting: a table of its own ----------------------------------------------
#: the characters of a URL code (URL-safe base64), in code point order
_CODE_CHARS = "".join(
    sorted("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
)
#: standard base64's characters in the order of their values
_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#: a code's character → the base64 character of its rank in code point
#: order (decoded: 6 bits a character, in the code's order); any other
#: ASCII character → one base64 refuses
_TO_RANK = {c: "*" for c in range(128)}
_TO_RANK.update({ord(c): _B64_CHARS[i] for i, c in enumerate(_CODE_CHARS)})
_FROM_RANK = str.maketrans(_B64_CHARS, _CODE_CHARS)
#: a packed value's first byte when its flags are written out (see
#: SQLiteWaiting): never the first byte of UTF-8
_ESCAPE = 0xFF


def _pack_code(code: str) -> str | bytes:
    """A URL code of 4 characters as 3 bytes (its 24 bits, in an order that
    keeps the codes'), anything else as itself (a TEXT: SQLite sorts every
    TEXT before every BLOB)."""
    if len(code) == 4 and code.isascii():
        try:
            return a2b_base64(code.translate(_TO_RANK), strict_mode=True)
        except BinasciiError:
            pass
    return code


def _unpack_code(stored: str | bytes) -> str:
    if type(stored) is bytes:
        return b2a_base64(stored, newline=False).decode("ascii").translate(_FROM_RANK)
    return str(stored)


def _pack_key(key: str) -> tuple[str | bytes, str | bytes]:
    head, newline, tail = key.partition("\n")
    if not newline:
        raise ValueError(f"{key!r}: a waiting link's key is <target>\\n<page>")
    return _pack_code(head), _pack_code(tail)


def _unpack_key(target: str | bytes, page: str | bytes) -> str:
    return _unpack_code(target) + "\n" + _unpack_code(page)


def _pack_value(bits: int, text: str) -> str | bytes | int:
    """A flagged row's value, its flags folded into SQLite's type (see
    SQLiteWaiting)."""
    if bits == 2 and text.isascii():
        return text  # the usual link text: no check needed
    raw = text.encode("utf-8", "surrogatepass")
    if bits == 3:
        return raw
    if bits == 2:
        try:
            return raw.decode("utf-8")  # a TEXT must read back as one
        except UnicodeDecodeError:
            pass  # a lone surrogate: written out below
    elif not text:
        return bits
    return bytes((_ESCAPE, 48 + bits)) + raw


def _unpack_value(stored: str | bytes | int) -> tuple[int, str]:
    kind = type(stored)
    if kind is int:
        return int(stored), ""
    if kind is str:
        return 2, str(stored)
    raw = bytes(stored)  # type: ignore[arg-type]
    if raw[:1] == b"\xff":
        return raw[1] - 48, raw[2:].decode("utf-8", "surrogatepass")
    return 3, raw.decode("utf-8", "surrogatepass")


def _left(stored: str | bytes | int, bits: int) -> str | bytes | int | None:
    """``wl_left``: the value with ``bits`` cleared, None when no flag is left."""
    flags, text = _unpack_value(stored)
    flags &= ~bits
    return _pack_value(flags, text) if flags else None


def _merge(
    stored: str | bytes | int, new: str | bytes | int, keep_text: int
) -> str | bytes | int:
    """``wl_merge``: ``stored`` with the flags of ``new`` set, and its text
    too unless ``keep_text``."""
    flags, text = _unpack_value(stored)
    bits, new_text = _unpack_value(new)
    return _pack_value(flags | bits, text if keep_text else new_text)


#: a waiting row's flags, in SQL (see SQLiteWaiting)
_WFLAGS = (
    "(CASE typeof(value) WHEN 'integer' THEN value WHEN 'text' THEN 2 ELSE "
    "iif(substr(value, 1, 1) = x'ff', unicode(CAST(substr(value, 2, 1) AS TEXT)) "
    "- 48, 3) END)"
)
_WFLAG = (
    "INSERT INTO waiting (target, page, value) VALUES (?, ?, ?) ON CONFLICT "
    "(target, page) DO UPDATE SET value = wl_merge(value, excluded.value, ?)"
)


class SQLiteWaiting:
    """``links.waiting`` (webspider.utils.waitinglinks) in a table of its own
    (state format 6): the records interface of a namespace of flagged
    records (webspider.records), in a third fewer bytes a row than the
    ``record`` table's (bench/README.md, "The waiting links packed").

    A row is ``(target, page, value)``, keyed by both; the records' key is
    ``<target>\\n<page>`` (every key has the newline: ValueError else).

    - ``target``, ``page``: a URL code of 4 characters
      (webspider.utils.urlcodes: nearly every one) as a BLOB of its 24
      bits, 6 a character in the order of the characters' code points, so
      that rows sort as their keys do; any other code as TEXT (SQLite sorts
      TEXT before BLOB: such rows come first). 3 bytes a code where the
      record table's key took the namespace's character, both codes and the
      newline: 10.
    - ``value``: the flags folded into the value's SQLite type, no byte of
      their own: an INTEGER is flags with no text (the mirror's bit alone:
      ``1``, which SQLite stores in no byte), a TEXT is the reports' bit
      with its text, a BLOB not starting with 0xFF the two bits with the
      text (UTF-8); any other flags with a text (or a text with a lone
      surrogate under the reports' bit alone) are a BLOB of 0xFF, the
      flags' character (``chr(48 + bits)``) and the text.

    Prefixes of ``items``, ``count``, ``unflag_prefix(es)`` and
    ``delete_prefix`` are ``""`` or a group ``"<target>\\n"`` (ValueError
    else). Values are flagged only: ``put`` and ``put_new`` take a flagged
    value, ``incr`` is refused. ``flag_many`` holds its rows until the
    state commits, as ``SQLiteRecords`` does ("Flags written behind").
    Clearing a range is two statements as in the record table (DELETE the
    rows left with no flag, UPDATE the others), the flags read in SQL; the
    values changed and the upserts that meet a row are rewritten by two
    functions registered on the connection (``wl_left``, ``wl_merge``)."""

    __slots__ = ("_db", "_flags", "name")

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self._db = db
        self.name = name
        db.create_function("wl_left", 2, _left, deterministic=True)
        db.create_function("wl_merge", 3, _merge, deterministic=True)
        self._flags: dict[str, list[Any]] = {}

    # -- flags ----------------------------------------------------------------------
    def flag_many(self, items: Iterable[tuple[str, int, str | None]]) -> None:
        items = list(items)
        for bits in {bits for _key, bits, _text in items}:
            check_bits(bits)
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

    def write_flags(self, within: Set[str] | None = None) -> None:
        """Write the rows ``flag_many`` holds (those of the groups
        ``within``, when given)."""
        held = self._flags
        if not held:
            return
        if within is None:
            rows = held
            self._flags = {}
        else:
            rows = {}
            for key in list(held):
                newline = key.find("\n")
                if newline >= 0 and key[: newline + 1] in within:
                    rows[key] = held.pop(key)
            if not rows:
                return
        self._db.executemany(
            _WFLAG,
            [
                (*_pack_key(key), _pack_value(bits, text or ""), text is None)
                for key, (bits, text) in rows.items()
            ],
        )

    def _write_flags_in(self, prefixes: Iterable[str]) -> None:
        if not self._flags:
            return
        groups: set[str] = set()
        for prefix in prefixes:
            if not prefix or prefix.find("\n") != len(prefix) - 1:
                self.write_flags()
                return
            groups.add(prefix)
        self.write_flags(groups)

    def unflag(self, keys: Iterable[str], bits: int) -> None:
        if self._flags:
            self.write_flags()
        check_bits(bits)
        stored = [_pack_key(key) for key in keys if "\n" in key]  # else absent
        self._db.executemany(
            f"DELETE FROM waiting WHERE target = ? AND page = ? AND {_WFLAGS} & ~? = 0",
            [(t, p, bits) for t, p in stored],
        )
        self._db.executemany(
            "UPDATE waiting SET value = wl_left(value, ?) "
            f"WHERE target = ? AND page = ? AND {_WFLAGS} & ? != 0",
            [(bits, t, p, bits) for t, p in stored],
        )

    def unflag_prefix(self, prefix: str, bits: int) -> None:
        check_bits(bits)
        if prefix:
            self.unflag_prefixes([prefix], bits)
            return
        self.write_flags()
        self._db.execute(f"DELETE FROM waiting WHERE {_WFLAGS} & ~? = 0", (bits,))
        self._db.execute(
            f"UPDATE waiting SET value = wl_left(value, ?) WHERE {_WFLAGS} & ? != 0",
            (bits, bits),
        )

    def unflag_prefixes(self, prefixes: Sequence[str], bits: int) -> None:
        check_bits(bits)
        if not prefixes:
            return
        if "" in prefixes:
            self.unflag_prefix("", bits)
            return
        targets = [(_group(prefix),) for prefix in prefixes]
        self._write_flags_in(prefixes)
        self._db.executemany(
            f"DELETE FROM waiting WHERE target = ? AND {_WFLAGS} & ~? = 0",
            [(t, bits) for (t,) in targets],
        )
        self._db.executemany(
            "UPDATE waiting SET value = wl_left(value, ?) "
            f"WHERE target = ? AND {_WFLAGS} & ? != 0",
            [(bits, t, bits) for (t,) in targets],
        )

    # -- reads ----------------------------------------------------------------------
    def get(self, key: str) -> Any | None:
        return self.get_many([key])[0]

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        if self._flags:
            self.write_flags()
        out: list[Any | None] = []
        execute = self._db.execute
        for key in keys:
            try:
                where = _pack_key(key)
            except ValueError:
                out.append(None)  # no such key here
                continue
            row = execute(
                "SELECT value FROM waiting WHERE target = ? AND page = ?", where
            ).fetchone()
            out.append(None if row is None else flagged(*_unpack_value(row[0])))
        return out

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        if prefix:
            target = _group(prefix)
            first = (
                "SELECT target, page, value FROM waiting WHERE target = ? "
                f"ORDER BY page LIMIT {_PAGE}"
            )
            more = (
                "SELECT target, page, value FROM waiting WHERE target = ? "
                f"AND page > ? ORDER BY page LIMIT {_PAGE}"
            )
            args: tuple[Any, ...] = (target,)
        else:
            first = (
                "SELECT target, page, value FROM waiting "
                f"ORDER BY target, page LIMIT {_PAGE}"
            )
            more = (
                "SELECT target, page, value FROM waiting WHERE (target, page) "
                f"> (?, ?) ORDER BY target, page LIMIT {_PAGE}"
            )
            args = ()
        if self._flags:
            self.write_flags()
        rows = self._db.execute(first, args).fetchall()
        while rows:
            for target, page, value in rows:
                yield _unpack_key(target, page), flagged(*_unpack_value(value))
            if len(rows) < _PAGE:
                return
            if self._flags:  # flagged while the caller iterates
                self.write_flags()
            last_target, last_page, _ = rows[-1]
            after = (last_page,) if prefix else (last_target, last_page)
            rows = self._db.execute(more, (*args, *after)).fetchall()

    def count(self, prefix: str = "") -> int:
        if self._flags:
            self.write_flags()
        if prefix:
            (n,) = self._db.execute(
                "SELECT COUNT(*) FROM waiting WHERE target = ?", (_group(prefix),)
            ).fetchone()
        else:
            (n,) = self._db.execute("SELECT COUNT(*) FROM waiting").fetchone()
        return int(n)

    # -- plain writes ---------------------------------------------------------------
    def put(self, key: str, value: Any) -> None:
        self.put_many([(key, value)])

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        if self._flags:
            self.write_flags()
        self._db.executemany(
            "INSERT OR REPLACE INTO waiting (target, page, value) VALUES (?, ?, ?)",
            [(*_pack_key(key), _flagged_value(value)) for key, value in items],
        )

    def put_new(self, key: str, value: Any) -> bool:
        return self.put_new_many([(key, value)])[0]

    def put_new_many(self, items: Sequence[tuple[str, Any]]) -> list[bool]:
        if self._flags:
            self.write_flags()
        out = []
        for key, value in items:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO waiting (target, page, value) VALUES (?, ?, ?)",
                (*_pack_key(key), _flagged_value(value)),
            )
            out.append(cursor.rowcount > 0)
        return out

    def incr(self, key: str, by: int = 1) -> int:
        raise ValueError(f"{self.name} holds flagged records only")

    def incr_many(self, counts: Mapping[str, int]) -> dict[str, int]:
        raise ValueError(f"{self.name} holds flagged records only")

    def delete(self, keys: Iterable[str]) -> None:
        if self._flags:
            self.write_flags()
        self._db.executemany(
            "DELETE FROM waiting WHERE target = ? AND page = ?",
            [_pack_key(key) for key in keys if "\n" in key],
        )

    def delete_prefix(self, prefix: str) -> None:
        if not prefix:
            self.clear()
            return
        target = _group(prefix)
        self._write_flags_in((prefix,))
        self._db.execute("DELETE FROM waiting WHERE target = ?", (target,))

    def clear(self) -> None:
        self._flags = {}  # written, they would be deleted
        self._db.execute("DELETE FROM waiting")


def _group(prefix: str) -> str | bytes:
    """The stored target of a group's prefix ``"<target>\\n"``."""
    if prefix.find("\n") != len(prefix) - 1:
        raise ValueError(
            f"{prefix!r}: a prefix of links.waiting is empty or <target>\\n"
        )
    return _pack_code(prefix[:-1])


def _flagged_value(value: Any) -> str | bytes | int:
    bits = flags_of(value)
    if not bits:
        raise ValueError(f"links.waiting holds flagged records only, not {value!r}")
    return _pack_value(bits, flag_text(value))
