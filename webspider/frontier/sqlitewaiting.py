"""``links.waiting`` in the embedded crawl state's SQLite file: a table of
its own, a target's waiting links packed in chunks (``SQLiteWaiting``; its
layout, writes and texts in the class's docstring). The chunks' bytes are
encoded and decoded in webspider.frontier.waitingchunks; this module holds
the SQL that stores them, splits them and keeps the repeated texts once.

The ``waiting`` and ``waiting_text`` tables are in
webspider.frontier.sqliterecords' ``SCHEMA``; the flags held until the
commit work as for the other records (webspider.frontier.heldflags).

Pure: standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from webspider.frontier.heldflags import HeldFlags
from webspider.frontier.state import StateError
from webspider.frontier.waitingchunks import (
    LONG,
    Links,
    code_order,
    decode_links,
    encode_link,
    encode_links,
    entry_of,
    group_target,
    materialise,
    pack_code,
    pack_key,
    unpack_code,
)
from webspider.records import FLAGS_MAX, check_bits, flagged

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Iterator, Mapping, Sequence, Set


#: a chunk of a target's waiting links is split past this many bytes (a row
#: of an index B-tree keeps ~230 bytes in its page with 1 KiB pages: more
#: goes to overflow pages)
CHUNK_BYTES = 200
#: chunks read a query while iterating
_CHUNKS = 64

#: a text this long or longer is kept once in ``waiting_text`` when it comes
#: again (SQLiteWaiting, "Texts"); a shorter one takes as few bytes inline
INTERN_FROM = 3
#: texts a generation of the texts' memory holds (two generations; ~100
#: bytes each)
TEXTS_KEPT = 8192


#: a link appended to the chunk of its page (SQLiteWaiting._locate), or the
#: first of a new chunk; the chunk's cleared bits applied to its bytes first
#: (``wl_clear``) when they would clear the new link's (?3) or the link has
#: no text (?6: its page's link they dropped would lend it its text)
_MATERIALISE = "cleared != 0 AND (cleared & ?3 != 0 OR ?6)"
_APPEND = (
    "INSERT INTO waiting (target, first, flags, links) VALUES (?1, coalesce(("
    "SELECT first FROM waiting WHERE target = ?1 AND first <= ?2 ORDER BY first "
    "DESC LIMIT 1), (SELECT first FROM waiting WHERE target = ?1 ORDER BY first "
    "LIMIT 1), ?2), ?3, ?4) ON CONFLICT (target, first) DO UPDATE SET "
    "flags = flags | excluded.flags, "
    f"links = CAST(CASE WHEN {_MATERIALISE} THEN wl_clear(links, cleared) "
    "ELSE links END || excluded.links AS BLOB), "
    f"cleared = CASE WHEN {_MATERIALISE} THEN 0 ELSE cleared END "
    "WHERE length(links) + length(excluded.links) <= ?5 "
    "OR wl_grown(target, first, length(links) + length(excluded.links))"
)

#: a target's range cleared of ?2: its chunks left with no flag deleted,
#: the others' bits kept in ``cleared`` (no chunk read)
_CLEAR_DELETE = "DELETE FROM waiting WHERE target = ?1 AND flags & ~?2 = 0"
_CLEAR_UPDATE = (
    "UPDATE waiting SET cleared = cleared | (flags & ?2), flags = flags & ~?2 "
    "WHERE target = ?1 AND flags & ?2 != 0"
)

#: an operation on one link: its entry (None: absent) → (the new entry or
#: None, whether it changed)
_Op = Callable[[list[Any] | None], tuple[list[Any] | None, bool]]


def _clear_op(bits: int) -> _Op:
    def op(old: list[Any] | None) -> tuple[list[Any] | None, bool]:
        if old is None or not old[0] & bits:
            return old, False
        left = old[0] & ~bits
        return ([left, old[1]] if left else None), True

    return op


def _set_op(flags: int, text: bytes, only_new: list[bool] | None) -> _Op:
    def op(old: list[Any] | None) -> tuple[list[Any] | None, bool]:
        if only_new is not None:
            only_new.append(old is None)
            if old is not None:
                return old, False
        new = [flags, text]
        return new, new != old

    return op


class SQLiteWaiting(HeldFlags):
    """``links.waiting`` (webspider.utils.waitinglinks) in a table of its own
    (state format 6, 8, 10): the records interface of a namespace of flagged
    records (webspider.records), the links of a target packed in chunks —
    about 40 % fewer bytes a link than the ``record`` table's row a link
    (bench/README.md, "The waiting links packed").

    A row is a *chunk*: ``(target, first, flags, cleared, links)``, keyed
    by the target and a page: the chunk holds the target's links from the
    pages from ``first`` up to the next chunk's ``first`` (the target's
    first chunk also those below its own: a page below every chunk's joins
    it, ``_locate``). ``flags`` is the union of its links' flags,
    ``cleared`` bits cleared from every link in ``links`` but not yet from
    its bytes (format 8; see Writes), ``links`` the links one after the
    other: a byte (the link's flags in bits 0-3,
    bit 4 set for a page code kept as text, bits 5-7 the text's length up
    to 5, 6 for no text given, 7 for a varint that follows), the page (3
    bytes; or a varint length and the code's UTF-8), for size 7 a varint:
    even, twice the length past 6 of a longer text, then the text (UTF-8);
    odd, twice the id of a text kept in ``waiting_text``, plus one (format
    10; see Texts). So a link costs its page's code, a byte and its text
    or the text's id, and the target's code and the row's overhead (~12
    bytes) are shared by the chunk's links: ~6 bytes a link on the
    synthetic site, ~8 with the B-tree's free space (~12 and ~18 with
    every text inline, format 8), where a row a link of the ``record``
    table took ~29.

    Texts. Most links' texts repeat (a site's navigation; on the
    synthetic site ``link N``, N the link's place in its page), and the
    text is only read for the links whose target turns out broken. So a
    text of INTERN_FROM characters or more that ``write_flags`` meets
    again among the last TEXTS_KEPT to twice TEXTS_KEPT distinct texts it
    met (two generations in memory: text → id, 0 while met once) is
    written once to ``waiting_text`` (a rowid table: appended, its pages
    full) and its links hold its id, one byte below 64, two below 8,192;
    a text met once stays in its link, as before (a site whose texts
    never repeat pays nothing in bytes). The id's row is written in the
    same transaction as the links that name it (the crawl process is the
    state's only writer, and a transaction not committed dies with it and
    with the memory of the ids it wrote); a process that opens the state
    again starts with no memory and keeps the texts it meets again once
    more (a second row for a text: bytes, never a wrong text). Rows are
    never deleted while a crawl runs (a text's links are not counted),
    only with every link (``clear``) and with the records when a finished
    crawl's state is compacted: at most one row a repeated text a process
    met, a few KB on the synthetic site. Ids read are kept in memory too
    (at most TEXTS_KEPT), others read with a query.

    Writes. ``flag_many`` holds its rows until the state commits, as
    ``SQLiteRecords`` does ("Flags written behind"), then appends each
    link to its chunk in SQL (``_APPEND``: one upsert a link, as a row a
    link took, no chunk read into Python); a chunk an append takes past
    CHUNK_BYTES is rewritten in chunks half full (``wl_grown``, a function
    registered on the connection, notes it). A page appended twice (read
    again after a kill, or flagged by two features in two commits) is two
    entries, read as the second applied to the first: idempotent, and
    merged the next time the chunk is rewritten. A target's range cleared
    (``unflag_prefix(es)``, each feature's answer) reads no chunk (format
    8): one statement deletes the chunks left with no flag (``flags``),
    one more ORs the bits into the others' ``cleared`` (and takes them
    from ``flags``); every read of a chunk applies its ``cleared`` to the
    links it decodes (a link left with no flag is absent). The bytes are
    edited (``wl_clear``, in the append's statement, the column reset)
    only when a link appended to the chunk would be wrong under them: its
    bits meet ``cleared``, or it has no text (a link of its page that the
    bits dropped would lend it its text); and whenever the chunk is
    rewritten anyway (a split, ``put``, ``unflag`` of keys). A chunk
    rewritten smaller is never split, so an iteration does not meet its
    links twice. ``unflag`` and ``delete`` of single keys, ``get``,
    ``put`` and ``put_new`` read the key's chunk (one query).

    Codes: a URL code of 4 characters (webspider.utils.urlcodes: nearly
    every one) is stored as 3 bytes of its 24 bits, 6 a character in the
    order of the characters' code points, so that links sort as their keys
    do; any other as TEXT (SQLite sorts TEXT before BLOB: such targets and
    pages come first). The records' key is ``<target>\\n<page>`` (every
    key has the newline: ValueError else; absent for reads and deletes).
    Prefixes of ``items``, ``count``, ``unflag_prefix(es)`` and
    ``delete_prefix`` are ``""`` or a group ``"<target>\\n"`` (ValueError
    else). Values are flagged only: ``put`` and ``put_new`` take a flagged
    value, ``incr`` is refused."""

    __slots__ = ("_db", "_grown", "_ids", "_ids_old", "_texts", "name")

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self._db = db
        self.name = name
        #: flag_many's rows not written yet: key → [bits, text]
        self._flags: dict[str, list[Any]] = {}
        #: chunks an append took past CHUNK_BYTES: (target, first)
        self._grown: list[tuple[Any, Any]] = []
        #: texts met lately → their id in waiting_text, 0 when met once and
        #: kept inline (two generations of TEXTS_KEPT: see "Texts")
        self._ids: dict[str, int] = {}
        self._ids_old: dict[str, int] = {}
        #: ids read or written lately → the text's UTF-8
        self._texts: dict[int, bytes] = {}
        db.create_function("wl_grown", 3, self._note_grown)
        db.create_function("wl_clear", 2, materialise, deterministic=True)

    def _note_grown(self, target: Any, first: Any, size: int) -> int:
        """``wl_grown``: note a chunk ``_APPEND`` takes past CHUNK_BYTES."""
        if size > CHUNK_BYTES:
            self._grown.append((target, first))
        return 1

    def _split(self, grown: list[tuple[Any, Any]]) -> None:
        """Rewrite the chunks ``grown`` in chunks of CHUNK_BYTES at most."""
        for target, first in dict.fromkeys(grown):
            row = self._db.execute(
                "SELECT links, cleared FROM waiting WHERE target = ? AND first = ?",
                (target, first),
            ).fetchone()
            if row is not None:
                self._store(target, first, decode_links(row[0], row[1]))

    # -- the chunks -----------------------------------------------------------------
    def _change(self, ops: dict[Any, list[tuple[Any, _Op]]]) -> None:
        """Apply each target's operations on its links (page, op)."""
        for target, page_ops in ops.items():
            page_ops.sort(key=lambda item: code_order(item[0]))
            loaded: dict[Any, Links] = {}
            dirty: set[Any] = set()
            for page, op in page_ops:
                row = self._locate(target, page)
                first: Any
                if row is not None:
                    first = row[0]
                    if first not in loaded:
                        loaded[first] = decode_links(row[1], row[2])
                else:  # none stored: the one made here, if any
                    first = min(loaded, key=code_order) if loaded else None
                links = None if first is None else loaded[first]
                old = None if links is None else links.get(page)
                new, changed = op(old)
                if not changed:
                    continue
                if links is None:
                    if new is None:
                        continue
                    first, links = page, {}
                    loaded[first] = links
                if new is None:
                    del links[page]
                else:
                    links[page] = new
                dirty.add(first)
            for first in dirty:
                self._store(target, first, loaded[first])

    def _locate(self, target: Any, page: Any) -> tuple[Any, bytes, int] | None:
        """The chunk (first, links, cleared) that holds or would hold ``page``'s link
        to ``target``: the last one whose first page is not after it, else
        the target's first chunk (which holds the pages below its first:
        a page below every chunk's makes no new chunk)."""
        execute = self._db.execute
        row = execute(
            "SELECT first, links, cleared FROM waiting WHERE target = ? "
            "AND first <= ? ORDER BY first DESC LIMIT 1",
            (target, page),
        ).fetchone()
        if row is None:
            row = execute(
                "SELECT first, links, cleared FROM waiting WHERE target = ? "
                "ORDER BY first LIMIT 1",
                (target,),
            ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def _store(self, target: Any, first: Any, links: Links) -> None:
        """Write the chunk ``(target, first)`` holding ``links`` (split when
        too long, deleted when empty; no bit left to clear)."""
        if not links:
            self._db.execute(
                "DELETE FROM waiting WHERE target = ? AND first = ?", (target, first)
            )
            return
        chunks = encode_links(
            {page: links[page] for page in sorted(links, key=code_order)}, CHUNK_BYTES
        )
        rows = [(target, head, union, data) for head, union, data in chunks]
        if len(chunks) == 1:
            rows[0] = (target, first, chunks[0][1], chunks[0][2])  # its place kept
        elif code_order(first) <= code_order(chunks[0][0]):
            rows[0] = (target, first, chunks[0][1], chunks[0][2])
        else:
            # split, a target's first chunk holding pages below its first:
            # the pieces are keyed by their first pages, the old row goes
            self._db.execute(
                "DELETE FROM waiting WHERE target = ? AND first = ?", (target, first)
            )
        self._db.executemany(
            "INSERT OR REPLACE INTO waiting (target, first, flags, cleared, links) "
            "VALUES (?, ?, ?, 0, ?)",
            rows,
        )

    def _clear_targets(self, targets: list[Any], bits: int) -> None:
        """Clear ``bits`` of every link of ``targets``: in SQL, no chunk read
        (the chunks' ``cleared``)."""
        rows = [(target, bits) for target in targets]
        self._db.executemany(_CLEAR_DELETE, rows)
        self._db.executemany(_CLEAR_UPDATE, rows)

    # -- flags ----------------------------------------------------------------------
    def write_flags(self, within: Set[str] | None = None) -> None:
        """Write the rows ``flag_many`` holds (those of the groups
        ``within``, when given)."""
        rows = self._take_flags(within)
        if not rows:
            return
        # appended to the chunk of their page's range (the target's first
        # link makes its first chunk, in any order: a page below it joins
        # it), in SQL: no chunk read (_APPEND's parameters)
        limit = CHUNK_BYTES  # wl_grown is called past it only
        appends: list[tuple[str | bytes, str | bytes, int, bytes, int, bool]] = []
        packed: dict[str, str | bytes] = {}  # a page's code, once a batch
        ids, ids_old = self._ids, self._ids_old
        for key, (bits, text) in rows.items():
            head, sep, tail = key.partition("\n")
            if not sep:
                pack_key(key)  # its error
            target = packed.get(head)
            if target is None:
                target = packed[head] = pack_code(head)
            page = packed.get(tail)
            if page is None:
                page = packed[tail] = pack_code(tail)
            if text is not None and len(text) >= INTERN_FROM:
                found = ids.get(text)
                if found is None:
                    found = ids_old.pop(text, None)
                    if found is None:
                        found = 0  # met once: inline
                    ids[text] = found
                    if len(ids) >= TEXTS_KEPT:
                        self._ids_old = ids_old = ids
                        self._ids = ids = {}
                elif not found:  # met again: kept once from now on
                    found = ids[text] = self._intern(text)
                if found:  # its id (< 64: one byte; < 8,192: two)
                    code = found << 1 | 1
                    if type(page) is bytes and code < 128:
                        link = bytes((bits | LONG << 5,)) + page + bytes((code,))
                    else:
                        link = encode_link(page, bits, found)
                    appends.append((target, page, bits, link, limit, False))
                    continue
            raw = None if text is None else text.encode("utf-8", "surrogatepass")
            if type(page) is bytes and raw is not None and len(raw) < 70:
                # the usual link, as link_bytes writes it
                size = len(raw)
                if size < 6:
                    link = bytes((bits | size << 5,)) + page + raw
                else:
                    link = (
                        bytes((bits | LONG << 5,))
                        + page
                        + bytes((size - 6 << 1,))
                        + raw
                    )
                appends.append((target, page, bits, link, limit, False))
                continue
            appends.append(
                (target, page, bits, encode_link(page, bits, raw), limit, raw is None)
            )
        grown = self._grown
        self._db.executemany(_APPEND, appends)
        if grown:
            self._grown = []
            self._split(grown)

    def _intern(self, text: str) -> int:
        """Keep ``text`` once in ``waiting_text`` (in the state's transaction)."""
        raw = text.encode("utf-8", "surrogatepass")
        cursor = self._db.execute("INSERT INTO waiting_text (text) VALUES (?)", (raw,))
        found = cursor.lastrowid
        assert found is not None
        self._remember_text(found, raw)
        return found

    def _remember_text(self, found: int, raw: bytes) -> None:
        texts = self._texts
        if len(texts) >= TEXTS_KEPT:
            texts.clear()
        texts[found] = raw

    def _text(self, text: bytes | int) -> bytes:
        """A decoded link's text: its UTF-8, read from ``waiting_text`` for
        an id."""
        if not isinstance(text, int):
            return text
        raw = self._texts.get(text)
        if raw is None:
            row = self._db.execute(
                "SELECT text FROM waiting_text WHERE id = ?", (text,)
            ).fetchone()
            if row is None:
                # written in the transaction of the links that name it: only a
                # damaged file lacks it, and an empty text would be a wrong one
                (_seq, _name, file) = self._db.execute(
                    "PRAGMA database_list"
                ).fetchone()
                # (the crawl stops on it: webspider.storage)
                raise StateError(
                    f"{file}: a waiting link names text {text}, which is missing"
                )
            raw = bytes(row[0])
            self._remember_text(text, raw)
        return raw

    def _value(self, found: list[Any]) -> str:
        return flagged(found[0], self._text(found[1]).decode("utf-8", "surrogatepass"))

    def _by_target(self, keys: Iterable[str], op: _Op) -> dict[Any, list[Any]]:
        ops: dict[Any, list[tuple[Any, _Op]]] = {}
        for key in keys:
            if "\n" in key:  # else absent
                target, page = pack_key(key)
                ops.setdefault(target, []).append((page, op))
        return ops

    def unflag(self, keys: Iterable[str], bits: int) -> None:
        if self._flags:
            self.write_flags()
        check_bits(bits)
        self._change(self._by_target(keys, _clear_op(bits)))

    def unflag_prefix(self, prefix: str, bits: int) -> None:
        check_bits(bits)
        if prefix:
            self.unflag_prefixes([prefix], bits)
            return
        self.write_flags()
        # every target's: _CLEAR_DELETE and _CLEAR_UPDATE without the target
        self._db.execute("DELETE FROM waiting WHERE flags & ~?1 = 0", (bits,))
        self._db.execute(
            "UPDATE waiting SET cleared = cleared | (flags & ?1), "
            "flags = flags & ~?1 WHERE flags & ?1 != 0",
            (bits,),
        )

    def unflag_prefixes(self, prefixes: Sequence[str], bits: int) -> None:
        check_bits(bits)
        if not prefixes:
            return
        if "" in prefixes:
            self.unflag_prefix("", bits)
            return
        targets = list(dict.fromkeys(group_target(prefix) for prefix in prefixes))
        self._write_flags_in(prefixes)
        self._clear_targets(targets, bits)

    # -- reads ----------------------------------------------------------------------
    def get(self, key: str) -> Any | None:
        return self.get_many([key])[0]

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        if self._flags:
            # a key's answer is its target's chunks: the held rows of the
            # keys' groups are the only ones it could see (the others wait
            # for the commit, where another feature's flag of the same row
            # joins them: one append, not two)
            groups = {key[: key.find("\n") + 1] for key in keys if "\n" in key}
            if groups:
                self._write_flags_in(groups)
        out: list[Any | None] = []
        for key in keys:
            if "\n" not in key:
                out.append(None)  # no such key here
                continue
            target, page = pack_key(key)
            row = self._locate(target, page)
            found = None if row is None else decode_links(row[1], row[2]).get(page)
            out.append(None if found is None else self._value(found))
        return out

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        if prefix:
            target = group_target(prefix)
            first = (
                "SELECT target, first, links, cleared FROM waiting WHERE target = ? "
                f"ORDER BY first LIMIT {_CHUNKS}"
            )
            more = (
                "SELECT target, first, links, cleared FROM waiting WHERE target = ? "
                f"AND first > ? ORDER BY first LIMIT {_CHUNKS}"
            )
            args: tuple[Any, ...] = (target,)
        else:
            first = (
                "SELECT target, first, links, cleared FROM waiting "
                f"ORDER BY target, first LIMIT {_CHUNKS}"
            )
            more = (
                "SELECT target, first, links, cleared FROM waiting WHERE "
                f"(target, first) > (?, ?) ORDER BY target, first LIMIT {_CHUNKS}"
            )
            args = ()
        if self._flags:
            self.write_flags()
        value = self._value
        rows = self._db.execute(first, args).fetchall()
        while rows:
            for target, _first, data, cleared in rows:
                head = unpack_code(target) + "\n"
                for page, found in decode_links(data, cleared).items():
                    yield head + unpack_code(page), value(found)
            if len(rows) < _CHUNKS:
                return
            if self._flags:  # flagged while the caller iterates
                self.write_flags()
            last_target, last_first = rows[-1][:2]
            after = (last_first,) if prefix else (last_target, last_first)
            rows = self._db.execute(more, (*args, *after)).fetchall()

    def count(self, prefix: str = "") -> int:
        return sum(1 for _ in self.items(prefix))

    # -- plain writes ---------------------------------------------------------------
    def put(self, key: str, value: Any) -> None:
        self.put_many([(key, value)])

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        if self._flags:
            self.write_flags()
        ops: dict[Any, list[tuple[Any, _Op]]] = {}
        for key, value in items:
            target, page = pack_key(key)
            ops.setdefault(target, []).append((page, _set_op(*entry_of(value), None)))
        self._change(ops)

    def put_new(self, key: str, value: Any) -> bool:
        return self.put_new_many([(key, value)])[0]

    def put_new_many(self, items: Sequence[tuple[str, Any]]) -> list[bool]:
        if self._flags:
            self.write_flags()
        out: list[bool] = []
        for key, value in items:
            target, page = pack_key(key)
            self._change({target: [(page, _set_op(*entry_of(value), out))]})
        return out

    def incr(self, key: str, by: int = 1) -> int:
        raise ValueError(f"{self.name} holds flagged records only")

    def incr_many(self, counts: Mapping[str, int]) -> dict[str, int]:
        raise ValueError(f"{self.name} holds flagged records only")

    def delete(self, keys: Iterable[str]) -> None:
        if self._flags:
            self.write_flags()
        self._change(self._by_target(keys, _clear_op(FLAGS_MAX)))

    def delete_prefix(self, prefix: str) -> None:
        if not prefix:
            self.clear()
            return
        target = group_target(prefix)
        self._write_flags_in((prefix,))
        self._db.execute("DELETE FROM waiting WHERE target = ?", (target,))

    def clear(self) -> None:
        self._flags = {}  # written, they would be deleted
        self._db.execute("DELETE FROM waiting")
        self._db.execute("DELETE FROM waiting_text")
        self._ids = {}
        self._ids_old = {}
        self._texts = {}
