"""64-bit URL fingerprints, and a compact set of them in memory.

The crawl state keys every URL on a 64-bit fingerprint of its canonical key
(the first 8 bytes of BLAKE2b: stable across processes and machines, unlike
``hash()``, and as fast as any hash in the standard library). The exact key
is kept in the store; the fingerprints are kept here, in an open-addressing
table in one ``array('q')`` — 8 bytes a slot, no Python object per URL.

The table grows by half when three quarters full, so it is between half and
three quarters full once it has grown: 11 to 16 bytes a URL (a Python set of
the URL strings costs about 120). A fingerprint not in the table was never
added (no false negatives); a fingerprint in it may belong to another URL
(two URLs in 2**64: about one chance in 10**5 in a crawl of 10 million), so
the store confirms every hit against the exact key before a URL is treated
as seen (webspider.frontier.sqlite).

A batch of keys is fingerprinted at once (``fingerprints``) and checked
with ``contains_many``: the crawl checks a page's links in one call.
bench/seen_scale.py measures it (a bucketed table with tag bytes was
tried and measured slower at 10M entries near its maximum load).

Pure: standard library only.
"""

from __future__ import annotations

import sys
from array import array
from hashlib import blake2b
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

#: the slot value of an empty slot (fingerprint 0 is stored as 1)
_EMPTY = 0
#: grow when more than this share of the slots is taken …
_MAX_LOAD = 0.75
#: … to this many times as many slots (so the load drops to one half)
_GROWTH = 1.5
_MIN_SLOTS = 1024
#: array('q') holds native-endian integers, fingerprint() reads little-endian
_SWAP = sys.byteorder != "little"


def fingerprint(key: str) -> int:
    """The signed 64-bit fingerprint of ``key`` (SQLite's INTEGER range)."""
    digest = blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def fingerprints(keys: Iterable[str]) -> array[int]:
    """``[fingerprint(key) for key in keys]``, a third cheaper: the digests
    are joined and read as integers in one step."""
    fps = array(
        "q",
        b"".join(
            [
                blake2b(k.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                for k in keys
            ]
        ),
    )
    if _SWAP:
        fps.byteswap()
    return fps


class FingerprintTable:
    """A set of 64-bit integers in an open-addressing table (linear probing).

    ``fp in table``, ``table.add(fp)`` (True when new), ``len(table)``,
    ``table.nbytes`` (memory held by the slots). Nothing is ever removed: a
    crawl's seen-set only grows."""

    __slots__ = ("_count", "_limit", "_size", "_slots")

    def __init__(self, expected: int = 0) -> None:
        size = max(_MIN_SLOTS, int(expected / _MAX_LOAD) + 1)
        self._slots = array("q", bytes(8 * size))
        self._size = size
        self._count = 0
        self._limit = int(size * _MAX_LOAD)

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        return self._size * 8

    def __contains__(self, fp: object) -> bool:
        if not isinstance(fp, int):
            return False
        if fp == _EMPTY:
            fp = 1
        slots = self._slots
        size = self._size
        i = fp % size
        while True:
            value = slots[i]
            if value == fp:
                return True
            if value == _EMPTY:
                return False
            i += 1
            if i == size:
                i = 0

    def contains_many(self, fps: Iterable[int]) -> list[bool]:
        """``[fp in table for fp in fps]``, without a method call each."""
        slots = self._slots
        size = self._size
        answers: list[bool] = []
        append = answers.append
        for given in fps:
            fp = given or 1  # 0 marks an empty slot
            i = fp % size
            while True:
                value = slots[i]
                if value == fp:
                    append(True)
                    break
                if value == _EMPTY:
                    append(False)
                    break
                i += 1
                if i == size:
                    i = 0
        return answers

    def add(self, fp: int) -> bool:
        if fp == _EMPTY:
            fp = 1
        if self._count >= self._limit:
            self._grow()
        slots = self._slots
        size = self._size
        i = fp % size
        while True:
            value = slots[i]
            if value == fp:
                return False
            if value == _EMPTY:
                slots[i] = fp
                self._count += 1
                return True
            i += 1
            if i == size:
                i = 0

    def _grow(self) -> None:
        old = self._slots
        size = int(self._size * _GROWTH) + 1
        slots = array("q", bytes(8 * size))
        for fp in old:
            if fp == _EMPTY:
                continue
            i = fp % size
            while slots[i] != _EMPTY:
                i += 1
                if i == size:
                    i = 0
            slots[i] = fp
        del old
        self._slots = slots
        self._size = size
        self._limit = int(size * _MAX_LOAD)
