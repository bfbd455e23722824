"""64-bit URL fingerprints, and a compact set of them in memory.

The crawl state keys every URL on a 64-bit fingerprint of its canonical key
(the first 8 bytes of BLAKE2b: stable across processes and machines, unlike
``hash()``, and the fastest digest in the standard library for URL-sized
input). The exact key is kept in the store; the fingerprints are kept here,
in one ``array('q')`` — 8 bytes a slot, no Python object per URL.

The array is cut into buckets of 8 slots (64 bytes, one cache line); a
fingerprint belongs in bucket ``fp % buckets`` and takes its first free
slot, or, when the bucket is full, the first free slot of the next buckets
(linear probing, a bucket at a time). A lookup is then one slice of the
array and a membership test in C: ``fp in slots[i:i + 8]`` — where probing
slot by slot in Python (the first version of this table) ran the
interpreter loop four to eight times per absent fingerprint at this load.
Slots fill from the left and nothing is ever removed, so a bucket whose last
slot is empty ends every search for a fingerprint that is not in it.

The table grows by half when seven eighths full, so once grown it is between
7/12 and 7/8 full: 9.1 to 13.7 bytes a URL (a Python set of the URL strings
costs about 120). A fingerprint not in the table was never added (no false
negatives); a fingerprint in it may belong to another URL (two URLs in
2**64: about one chance in 10**5 in a crawl of 10 million), so the store
confirms every hit against the exact key before a URL is treated as seen
(webspider.frontier.sqlite). bench/seen_scale.py measures it.

Pure: standard library only.
"""

from __future__ import annotations

import sys
from array import array
from hashlib import blake2b
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

#: slots per bucket
_WIDTH = 8
_LAST = _WIDTH - 1
#: grow when more than this share of the slots is taken …
_MAX_LOAD = 0.875
#: … to this many times as many buckets
_GROWTH = 1.5
_MIN_BUCKETS = 128
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
    """A set of 64-bit integers in a bucketed open-addressing table.

    ``fp in table``, ``table.contains_many(fps)``, ``table.add(fp)`` (True
    when new), ``len(table)``, ``table.nbytes`` (memory held by the slots
    and their tags). Nothing is ever removed: a crawl's seen-set only
    grows."""

    __slots__ = ("_buckets", "_count", "_limit", "_slots", "_tags")

    def __init__(self, expected: int = 0) -> None:
        self._count = 0
        self._allocate(max(_MIN_BUCKETS, int(expected / (_WIDTH * _MAX_LOAD)) + 1))

    def _allocate(self, buckets: int) -> None:
        self._slots = array("q", bytes(8 * _WIDTH * buckets))
        self._tags = bytearray(_WIDTH * buckets)
        self._buckets = buckets
        self._limit = int(buckets * _WIDTH * _MAX_LOAD)

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        return self._buckets * _WIDTH * 9

    def __contains__(self, fp: object) -> bool:
        if not isinstance(fp, int):
            return False
        # the usual case in a few steps: the tag found and the slot equal
        # (a member), or no tag and room left in the bucket (not a member)
        i = fp % self._buckets * _WIDTH
        tags = self._tags
        j = tags.find((fp >> 56) % 255 + 1, i, i + _WIDTH)
        if j >= 0:
            if self._slots[j] == fp:
                return True
        elif not tags[i + _LAST]:
            return False
        return self._search(fp)

    def contains_many(self, fps: Iterable[int]) -> list[bool]:
        """``[fp in table for fp in fps]``, without a method call each."""
        slots = self._slots
        tags = self._tags
        find = tags.find
        buckets = self._buckets
        search = self._search
        answers: list[bool] = []
        append = answers.append
        for fp in fps:
            i = fp % buckets * _WIDTH
            j = find((fp >> 56) % 255 + 1, i, i + _WIDTH)
            if j >= 0:
                append(slots[j] == fp or search(fp))
            else:
                append(bool(tags[i + _LAST]) and search(fp))
        return answers

    def _search(self, fp: int) -> bool:
        """The long way: every slot with ``fp``'s tag, bucket after bucket
        until one with room left (where ``fp`` would have been placed)."""
        slots = self._slots
        tags = self._tags
        tag = (fp >> 56) % 255 + 1
        buckets = self._buckets
        b = fp % buckets
        while True:
            i = b * _WIDTH
            end = i + _WIDTH
            j = tags.find(tag, i, end)
            while j >= 0:
                if slots[j] == fp:
                    return True
                j = tags.find(tag, j + 1, end)
            if not tags[end - 1]:
                return False
            b += 1
            if b == buckets:
                b = 0

    def add(self, fp: int) -> bool:
        if self._count >= self._limit:
            self._grow()
        if self._place(fp):
            self._count += 1
            return True
        return False

    def _place(self, fp: int) -> bool:
        if fp in self:
            return False
        tags = self._tags
        buckets = self._buckets
        b = fp % buckets
        while True:
            i = b * _WIDTH
            j = tags.find(0, i, i + _WIDTH)
            if j >= 0:
                tags[j] = (fp >> 56) % 255 + 1
                self._slots[j] = fp
                return True
            b += 1
            if b == buckets:
                b = 0

    def _grow(self) -> None:
        old, old_tags = self._slots, self._tags
        self._allocate(int(self._buckets * _GROWTH) + 1)
        slots, tags, buckets = self._slots, self._tags, self._buckets
        find = tags.find
        for j, fp in enumerate(old):
            if not old_tags[j]:
                continue
            # every fingerprint in the old table is distinct: no lookup
            b = fp % buckets
            while True:
                i = b * _WIDTH
                k = find(0, i, i + _WIDTH)
                if k >= 0:
                    tags[k] = old_tags[j]
                    slots[k] = fp
                    break
                b += 1
                if b == buckets:
                    b = 0
