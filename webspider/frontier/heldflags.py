"""Flags written behind: ``HeldFlags``, the rows ``flag_many`` holds until
the state commits, shared by the embedded state's two stores of flagged
records (webspider.frontier.sqliterecords.SQLiteRecords, the ``record``
table; webspider.frontier.sqlitewaiting.SQLiteWaiting, ``links.waiting``'s
chunks), each of which writes them to its own table (``write_flags``).

Apart from both stores because it is the one policy they share (what is
held, merged, and written when), not either table's SQL.

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

Pure: standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from webspider.records import check_bits

if TYPE_CHECKING:
    from collections.abc import Iterable, Set

#: flagged rows held at most before they are written (see "Flags written
#: behind")
FLAGS_HELD = 8192


class HeldFlags:
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
