"""Records: per-URL data a feature keeps in the crawl state, not in memory.

A feature that remembers something per URL or per origin (the mirror's
URL→file index and pending fix-ups, the broken-link and duplicate ledgers,
robots.txt rules, trap counters) keeps it in a namespace of *records*: keyed
JSON values, written in the crawl state's transaction. So they are committed
together with the acknowledgements of the pages they came from (a resumed
crawl finds exactly what the pages it will not fetch again left), they cost
no memory per URL, and a shared crawl state (Redis) shares them between
workers.

- ``RecordStore.records(name)`` returns the namespace ``name`` (created on
  first use). Names are dotted by feature: ``mirror.index``,
  ``reports.broken``.
- Values are what ``json.dumps`` writes (dicts, lists, strings, numbers,
  booleans, None is not a value: ``get`` returns None for "absent"). Never
  pickled: another process, machine or version may read them.
- ``items(prefix)`` streams the records in key order (code point order of the
  keys), a page at a time: a namespace is never loaded whole, and records
  written while iterating do not upset the iteration. Keys that share a
  prefix (``"<url>\\n<referrer>"``) make a one-to-many ledger.
- *Flagged records* let features share a row (a link two features keep
  until each learns what it waits for): the value is a string, its first
  character the row's flags (``chr(48 + bits)``, bits 1 to 15), the rest a
  text. ``flag_many`` sets bits (and the text when given), ``unflag`` and
  ``unflag_prefix`` clear bits and delete a row left with none: each is one
  atomic read-modify-write of the backend (SQL statements in the embedded
  state's transaction, whose crawl process is the only writer; a Lua
  script on Redis),
  so features that clear their part of a row in turn never lose the
  other's, however workers interleave; and each is idempotent (a page read
  again after a kill sets the same bits). A namespace holds flagged records
  only, or none. ``flags_of`` and ``flag_text`` read a value.
- A store may keep a namespace in a layout of its own, behind the same
  interface: the embedded state keeps ``links.waiting``
  (webspider.utils.waitinglinks) packed in chunks by target
  (webspider.frontier.sqlitewaiting.SQLiteWaiting). Its keys must then
  have the one-to-many shape (``"<a>\\n<b>"``), its prefixes be ``""`` or a
  group ``"<a>\\n"``, its values be flagged (ValueError else); and its
  keys sort as strings except that codes of 4 URL-safe base64 characters
  (the crawl's URL codes) sort after every other string.

Who provides it: the frontier's crawl state (webspider.frontier.state), and
``MemoryRecords`` (a dict) when a crawl runs without one (another
SCHEDULER) and in unit tests. A feature gets its store from the
``webspider.signals.crawl_state_opened`` signal, which the scheduler sends
when it opens the state (before ``spider_opened``); ``records_or_memory``
gives the fallback.

Pure: standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence


class Records(Protocol):
    """One namespace of keyed JSON records; see the module docstring."""

    def get(self, key: str) -> Any | None:
        """The value of ``key``, or None when there is none."""
        ...

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        """``[get(key) for key in keys]`` in one round trip."""
        ...

    def put(self, key: str, value: Any) -> None: ...

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        """Put every ``(key, value)``, in one round trip."""
        ...

    def put_new(self, key: str, value: Any) -> bool:
        """Put ``value`` unless ``key`` has one; True when it was put."""
        ...

    def put_new_many(self, items: Sequence[tuple[str, Any]]) -> list[bool]:
        """``[put_new(key, value) for key, value in items]`` in one round trip."""
        ...

    def incr(self, key: str, by: int = 1) -> int:
        """Add ``by`` to the integer at ``key`` (0 when absent); the new value."""
        ...

    def incr_many(self, counts: Mapping[str, int]) -> dict[str, int]:
        """``incr`` of every key by its count in one round trip; the new values."""
        ...

    def delete(self, keys: Iterable[str]) -> None: ...

    def flag_many(self, items: Iterable[tuple[str, int, str | None]]) -> None:
        """For each ``(key, bits, text)``: the row's flags get ``bits`` (a
        new row starts with no flag and an empty text); its text becomes
        ``text`` unless it is None. In one round trip."""
        ...

    def unflag(self, keys: Iterable[str], bits: int) -> None:
        """Clear ``bits`` of the rows ``keys``; a row left with no flag is
        deleted (its text too)."""
        ...

    def unflag_prefix(self, prefix: str, bits: int) -> None:
        """``unflag`` of every row whose key starts with ``prefix``."""
        ...

    def unflag_prefixes(self, prefixes: Sequence[str], bits: int) -> None:
        """``unflag_prefix`` of each of ``prefixes``, in one round trip."""
        ...

    def delete_prefix(self, prefix: str) -> None:
        """Delete the records whose key starts with ``prefix`` (a group of a
        one-to-many ledger), without reading them."""
        ...

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        """The records whose key starts with ``prefix``, in key order, streamed."""
        ...

    def count(self, prefix: str = "") -> int:
        """How many records have a key starting with ``prefix``."""
        ...

    def clear(self) -> None:
        """Delete every record of the namespace."""
        ...


#: the largest flags of a flagged record
FLAGS_MAX = 15


def flagged(bits: int, text: str = "") -> str:
    """The value of a flagged record (see the module docstring)."""
    return chr(48 + bits) + text


def flags_of(value: Any) -> int:
    """The flags of a flagged record's value (0 for anything else)."""
    if type(value) is str and value:
        bits = ord(value[0]) - 48
        if 0 < bits <= FLAGS_MAX:
            return bits
    return 0


def flag_text(value: str) -> str:
    """The text of a flagged record's value."""
    return value[1:]


def check_bits(bits: int) -> None:
    if not 0 < bits <= FLAGS_MAX:
        raise ValueError(f"flag bits {bits} out of 1..{FLAGS_MAX}")


class RecordStore(Protocol):
    """Something that holds namespaces of records (a crawl state)."""

    def records(self, name: str) -> Records: ...


class MemoryRecords:
    """Records in a dict: a crawl without a crawl state, and tests.

    Keys of the one-to-many shape ``"<a>\n<b>"`` are also indexed by their
    ``"<a>\n"``, so that ``items("<a>\n")`` and ``count("<a>\n")`` cost
    what that group holds, not a scan of the namespace (a ledger asks that
    once per page)."""

    __slots__ = ("_data", "_groups")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self._groups: dict[str, set[str]] = {}

    def get(self, key: str) -> Any | None:
        return self._data.get(key)

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        data = self._data
        return [data.get(key) for key in keys]

    def _grouped(self, key: str) -> None:
        head, newline, _ = key.partition("\n")
        if newline:
            self._groups.setdefault(head + newline, set()).add(key)

    def put(self, key: str, value: Any) -> None:
        if key not in self._data:
            self._grouped(key)
        self._data[key] = value

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        for key, value in items:
            self.put(key, value)

    def put_new(self, key: str, value: Any) -> bool:
        if key in self._data:
            return False
        self.put(key, value)
        return True

    def put_new_many(self, items: Sequence[tuple[str, Any]]) -> list[bool]:
        return [self.put_new(key, value) for key, value in items]

    def incr(self, key: str, by: int = 1) -> int:
        value = int(self._data.get(key) or 0) + by
        self.put(key, value)
        return value

    def incr_many(self, counts: Mapping[str, int]) -> dict[str, int]:
        return {key: self.incr(key, by) for key, by in counts.items()}

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            if self._data.pop(key, None) is None:
                continue
            head, newline, _ = key.partition("\n")
            if newline:
                group = self._groups.get(head + newline)
                if group is not None:
                    group.discard(key)
                    if not group:
                        del self._groups[head + newline]

    def delete_prefix(self, prefix: str) -> None:
        self.delete(list(self._keys(prefix)))

    def flag_many(self, items: Iterable[tuple[str, int, str | None]]) -> None:
        data = self._data
        for key, bits, text in items:
            check_bits(bits)
            old = data.get(key)
            if old is None:
                self.put(key, flagged(bits, text or ""))
            else:
                data[key] = flagged(
                    flags_of(old) | bits, flag_text(old) if text is None else text
                )

    def unflag(self, keys: Iterable[str], bits: int) -> None:
        check_bits(bits)
        data = self._data
        gone: list[str] = []
        for key in keys:
            old = data.get(key)
            if old is None:
                continue
            left = flags_of(old) & ~bits
            if left:
                data[key] = flagged(left, flag_text(old))
            else:
                gone.append(key)
        self.delete(gone)

    def unflag_prefix(self, prefix: str, bits: int) -> None:
        self.unflag(list(self._keys(prefix)), bits)

    def unflag_prefixes(self, prefixes: Sequence[str], bits: int) -> None:
        check_bits(bits)
        for prefix in prefixes:
            self.unflag_prefix(prefix, bits)

    def _keys(self, prefix: str) -> Iterable[str]:
        if prefix.endswith("\n") and prefix.find("\n") == len(prefix) - 1:
            return self._groups.get(prefix, ())
        return (k for k in self._data if k.startswith(prefix))

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        # a snapshot of the keys: writes while iterating are allowed
        for key in sorted(self._keys(prefix)):
            if key in self._data:
                yield key, self._data[key]

    def count(self, prefix: str = "") -> int:
        if not prefix:
            return len(self._data)
        return sum(1 for _ in self._keys(prefix))

    def clear(self) -> None:
        self._data.clear()
        self._groups.clear()


class MemoryRecordStore:
    """A RecordStore of MemoryRecords (one per name, kept)."""

    __slots__ = ("_namespaces",)

    def __init__(self) -> None:
        self._namespaces: dict[str, MemoryRecords] = {}

    def records(self, name: str) -> Records:
        found = self._namespaces.get(name)
        if found is None:
            found = self._namespaces[name] = MemoryRecords()
        return found


def records_or_memory(store: RecordStore | None) -> RecordStore:
    """``store``, or a MemoryRecordStore when the crawl has no crawl state."""
    return store if store is not None else MemoryRecordStore()
