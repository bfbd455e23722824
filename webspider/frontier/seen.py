"""The seen-set: the interface every reader of "was this URL seen?" uses.

A SeenSet answers ``key in seen`` and ``len(seen)``, and takes
``seen.add(key)``, True when the key was new (so that a store checks and
inserts in one step: SQLite's INSERT OR IGNORE, Redis' SADD). Keys are
strings (the dupefilter's canonical URLs), compared exactly. Nothing ever
iterates or removes, so an implementation may keep its keys where that would
be slow or impossible (a compact exact set, a store).

Only the dupefilter adds. Everyone else — the spider's per-link check, the
scheduler, the reports — gets ``seen.view()``: a live SeenKeys (``in`` and
``len``, nothing more) over the same keys, whatever object answers those
fastest. For MemorySeenSet that is its Python set itself: ``key in view`` is
then the C membership test of a plain set, as cheap as before this interface
existed (25 ns), where a wrapper's Python ``__contains__`` costs 3.5 times
as much, and even a bare ``set`` subclass 1.7 times, because set's own
``__contains__`` method sends a subclass's ``in`` through a slot lookup
(bench/seen_overhead.py). A store-backed set can return itself.

Persisting MemorySeenSet is the dupefilter's journal
(``<JOBDIR>/webspider-seen.txt``, see webspider.frontier.dupefilter); an
implementation backed by a store persists itself. The spider and the reports
get the crawl's view with ``webspider.frontier.schedulerlookup.seen_urls(crawler)``
(the crawl state's seen-set, or this dupefilter's with another SCHEDULER).
tests/test_frontier_seen.py is the contract every implementation passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


class SeenKeys(Protocol):
    """A live, read-only view of a seen-set: what its readers may ask."""

    def __contains__(self, key: str, /) -> bool: ...

    def __len__(self) -> int: ...


def seen_many(seen: SeenKeys, keys: Sequence[str]) -> list[bool]:
    """``[key in seen for key in keys]``, in one call where ``seen`` can
    answer a batch at once (the crawl state's ``contains_many``: the
    fingerprints of a page's links together, and one query for their
    hits)."""
    many = getattr(seen, "contains_many", None)
    if many is not None:
        answers: list[bool] = many(keys)
        return answers
    return [key in seen for key in keys]


class SeenSet(SeenKeys, Protocol):
    """Keys seen so far; see the module docstring."""

    def add(self, key: str, /) -> bool:
        """Add ``key``; True when it was not in the set before."""
        ...

    def view(self) -> SeenKeys:
        """The same keys for readers, now and as they are added."""
        ...


class MemorySeenSet:
    """A SeenSet in a Python set."""

    __slots__ = ("_keys",)

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._keys = set(keys)

    def __contains__(self, key: str, /) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: str, /) -> bool:
        keys = self._keys
        size = len(keys)
        keys.add(key)
        return len(keys) != size

    def view(self) -> SeenKeys:
        # the set itself, for plain-set speed (see the module docstring)
        return self._keys
