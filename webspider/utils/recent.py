"""The values of the keys read or written lately, in two generations.

A feature that reads the same few keys of its records on every page (the
links every page repeats: navigation, index, footer) keeps their values here
and asks its records only for the rest. A key is looked up in the young
generation, then in the old one (and moved to the young one); when the young
one holds ``size`` keys it becomes the old one and the former old one is
dropped. So the keys every page asks for stay, however many others pass
through, and memory is bounded by twice ``size`` keys.

The owner must be the only writer of what it remembers (``keep`` what it
writes, ``forget`` what it deletes): a shared state's other workers write
too, so there it remembers nothing.

Pure: standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

K = TypeVar("K")
V = TypeVar("V")


class Recent(Generic[K, V]):
    """Two generations of at most ``size`` keys each; see the module docstring."""

    __slots__ = ("_old", "_young", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}

    def lookup(self, keys: Sequence[K]) -> tuple[list[V | None], list[int], list[K]]:
        """The remembered value of each of ``keys`` (None where it is not
        remembered), the positions of those not remembered, and their keys,
        to be read and then given to ``fill``."""
        young, old = self._young, self._old
        out: list[V | None] = []
        at: list[int] = []
        missing: list[K] = []
        for key in keys:
            if key in young:
                out.append(young[key])
            elif key in old:
                value = young[key] = old.pop(key)
                out.append(value)
            else:
                at.append(len(out))
                missing.append(key)
                out.append(None)
        return out, at, missing

    def lookup_map(self, keys: Iterable[K]) -> tuple[dict[K, V | None], list[K]]:
        """``lookup`` of ``keys`` that may repeat, without their list: the
        remembered value of each distinct key (None where it is not
        remembered), in the order they first come, and the keys not
        remembered, to be read and then given to ``fill_map``. One pass and
        one dictionary, where the list a caller made distinct first, the
        lookup's three lists and a dictionary of them took four."""
        young, old = self._young, self._old
        out: dict[K, V | None] = {}
        missing: list[K] = []
        for key in keys:
            if key in out:
                continue
            if key in young:
                out[key] = young[key]
            elif key in old:
                out[key] = young[key] = old.pop(key)
            else:
                out[key] = None
                missing.append(key)
        return out, missing

    def fill_map(
        self, out: dict[K, V | None], keys: Sequence[K], values: Iterable[V]
    ) -> None:
        """Put ``values`` (read for ``keys``) into ``out`` and remember them."""
        young = self._young
        for key, value in zip(keys, values, strict=True):
            out[key] = young[key] = value
        self._turn()

    def fill(
        self,
        out: list[V | None],
        at: Sequence[int],
        keys: Sequence[K],
        values: Iterable[V],
    ) -> None:
        """Put ``values`` (read for ``keys``) at positions ``at`` of ``out``
        and remember them."""
        young = self._young
        for i, key, value in zip(at, keys, values, strict=True):
            out[i] = young[key] = value
        self._turn()

    def keep(self, items: Iterable[tuple[K, V]]) -> None:
        """Remember each ``(key, value)`` just written."""
        young, old = self._young, self._old
        for key, value in items:
            old.pop(key, None)
            young[key] = value
        self._turn()

    def forget(self, keys: Iterable[K]) -> None:
        """Forget ``keys`` (changed without their new value at hand, or deleted)."""
        young, old = self._young, self._old
        for key in keys:
            young.pop(key, None)
            old.pop(key, None)

    def clear(self) -> None:
        self._young.clear()
        self._old.clear()

    def _turn(self) -> None:
        if len(self._young) >= self.size:
            self._old = self._young
            self._young = {}
