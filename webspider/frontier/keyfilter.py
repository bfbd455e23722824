"""A compact in-memory filter of string keys: "never added", or "maybe".

The embedded crawl state (webspider.frontier.sqlite) keeps the exact keys
in its file and this filter in memory, in front of it: a key the filter
has not got was never added, and the state answers "not seen" without
touching the file — most of a crawl's new links; a key it has got is
confirmed against the file (so no URL is ever dropped for a filter's
mistake, and a hit costs one row read unless the state cached it).

Each key is kept as a 32-bit tag of Python's own ``hash(key)`` in an
open-addressing table (linear probing) in one ``array('I')``: 4 bytes a
slot, no Python object per key. Why ``hash()``: a page's links are new
``str`` objects, and the hash of a string is computed once, in C, then
cached on it; a BLAKE2b digest a link costs several times the rest of the
check (bench/seen_scale.py). It differs between processes, so the filter
lives only in memory and the state rebuilds it from its keys on opening.

The home slot is the tag modulo the table's size, so the table can grow
from the tags alone. Two keys with one tag share a slot (the second adds
nothing): a key not added but sharing the tag of one of the n added is
reported "maybe", with a probability of n / 2**32 (0.2 % of the checks
at 10 million keys) — one row read more, never a wrong answer.

The table grows by half when half full: between a third and a half full
once it has grown, 8 to 12 bytes a key (16 to 20 for the moment a growth
holds both arrays); a check that misses probes about 2 slots on average
at a half, against 8.5 at three quarters.

Pure: standard library only.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

#: a tag is the low 32 bits of hash(); 0 marks an empty slot (tag 0 is kept as 1)
_MASK = 0xFFFFFFFF
#: grow when more than this share of the slots is taken …
_MAX_LOAD = 0.5
#: … to this many times as many slots
_GROWTH = 1.5
_MIN_SLOTS = 1024


def _slots_of(size: int) -> array[int]:
    slots = array("I", bytes(4 * size))
    assert slots.itemsize == 4
    return slots


class KeyFilter:
    """``key in f`` (False: never added; True: maybe), ``f.maybe_many(keys)``,
    ``f.add(key)``, ``len(f)`` (tags held), ``f.nbytes`` (the slots).
    Nothing is ever removed: a crawl's seen-set only grows."""

    __slots__ = ("_count", "_limit", "_size", "_slots")

    def __init__(self, expected: int = 0) -> None:
        size = max(_MIN_SLOTS, int(expected / _MAX_LOAD) + 1)
        self._slots = _slots_of(size)
        self._size = size
        self._count = 0
        self._limit = int(size * _MAX_LOAD)

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        return self._size * 4

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return self.maybe_many((key,))[0]

    def maybe_many(self, keys: Iterable[str]) -> list[bool]:
        """``[key in f for key in keys]`` in one loop: the crawl asks for a
        page's links at once."""
        slots = self._slots
        size = self._size
        answers: list[bool] = []
        append = answers.append
        for h in map(hash, keys):
            tag = h & _MASK or 1
            i = tag % size
            while True:
                value = slots[i]
                if value == tag:
                    append(True)
                    break
                if not value:
                    append(False)
                    break
                i += 1
                if i == size:
                    i = 0
        return answers

    def add(self, key: str) -> None:
        if self._count >= self._limit:
            self._grow()
        tag = hash(key) & _MASK or 1
        slots = self._slots
        size = self._size
        i = tag % size
        while True:
            value = slots[i]
            if value == tag:
                return
            if not value:
                slots[i] = tag
                self._count += 1
                return
            i += 1
            if i == size:
                i = 0

    def _grow(self) -> None:
        old = self._slots
        size = int(self._size * _GROWTH) + 1
        slots = _slots_of(size)
        for tag in old:
            if not tag:
                continue
            i = tag % size
            while slots[i]:
                i += 1
                if i == size:
                    i = 0
            slots[i] = tag
        del old
        self._slots = slots
        self._size = size
        self._limit = int(size * _MAX_LOAD)
