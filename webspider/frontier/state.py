"""The crawl state: one interface for everything a resumed crawl needs.

A ``CrawlState`` holds, consistent with each other:

- the seen-set: every request key (the canonical URL; webspider.frontier.
  dupefilter.request_key) ever queued, exactly — ``key in state``;
- the queue: the requests not fetched yet, breadth-first *per origin* (depth
  order within an origin, FIFO within a depth and priority), so that a slow
  or paused origin delays only itself;
- leases: requests handed out and not acknowledged yet, each with a deadline.
  ``ack`` marks them done, ``release`` puts them back at the head of their
  origin's queue, ``expire`` puts back those past their deadline, and
  ``release_all`` — on resume, when the process that held them is dead —
  puts back every one at once;
- the deferred frontier (links beyond the depth cap) and the current round:
  ``next_round`` moves the URLs deferred before it into the queue at depth 0
  and advances the round in the same transaction;
- crawl metadata (format version, start URLs and scope fingerprint, run
  number: ``get_meta``/``set_meta``) and how far each output file got
  (``get_offset``/``set_offset``: a committed byte offset).

Everything written since the last ``commit`` is one transaction: after a
crash the state is exactly as it was at the last commit, so the caller
commits the output offsets together with the acks of the pages they hold.

A request is stored as data (``StoredRequest``: what a JSON encoder could
write), never pickled: the state may be read by another process, another
machine (the Redis implementation of the distributed crawl) or a later
version. Requests that cannot be written as data (a custom callback, meta
the crawl does not know) are the scheduler's business, not the store's.

- records (webspider.records): namespaces of keyed JSON values that
  features keep per URL or per origin (the mirror's URL→file index and
  pending fix-ups, the broken-link and duplicate ledgers, robots.txt rules),
  written in the same transaction as the rest.

Implementations: webspider.frontier.sqlite.SQLiteState (embedded, the
default). tests/test_frontier_state.py is the contract every implementation
passes (its ``state`` fixture is parametrised over them).

Pure: standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from webspider.exceptions import CrawlStateError, StateWriteRefused
from webspider.storage import DAMAGED_ADVICE

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from webspider.records import Records

#: bumped when the stored layout changes; a state of another version is
#: refused (3: the features' records name URLs by the crawl's shared codes,
#: webspider.utils.urlcodes.UrlCodes; 4: the links waiting for their target
#: are one row for the mirror and the reports, webspider.utils.waitinglinks,
#: and the mirror's index is keyed by ``<site code><path>``,
#: webspider.mirror.state; 5: the mirror's ``mirror.where`` rows are gone,
#: a file's place is read from the index record; 6, the embedded state
#: only: ``links.waiting`` in a table of its own, webspider.frontier.sqlitewaiting.
#: SQLiteWaiting; 7, the embedded state only: the queue's fingerprints of
#: 32 bits, webspider.frontier.fingerprints; 8, the embedded state only: a
#: waiting-links chunk's cleared bits kept in a column, SQLiteWaiting; 9,
#: the embedded state only: a done row's status 0, and the namespaces keyed
#: by hashes in tables of their own with their keys' bytes, webspider.
#: frontier.sqlitehashed.SQLiteHashed; 10, the embedded state only: a
#: waiting link's text kept once in ``waiting_text`` when it repeats,
#: SQLiteWaiting)
FORMAT_VERSION = 10

#: metadata names every implementation keeps
META_FORMAT = "format"
META_FINGERPRINT = "crawl_fingerprint"
META_RUN = "run"
META_FINISHED = "finished"


class StateError(CrawlStateError):
    """The state cannot be used (corrupt, truncated, another format version,
    locked by another crawl); the message is one line naming the file. Met
    while the crawl runs, it stops it (webspider.storage)."""


class StateRefused(StateWriteRefused, StateError):
    """The state's store refused a write it may accept later (Redis: out of
    memory, a read-only replica…): refused before the crawl (a StateError),
    and while it runs a stop the same command continues (webspider.storage)."""


def damaged_refusal(error: str) -> str:
    """The refusal of a state an earlier crawl found damaged (``error``),
    after its place."""
    return (
        f"damaged crawl state, found by the crawl that stopped on it ({error}); "
        f"{DAMAGED_ADVICE} (the crawl cannot be continued)"
    )


#: the origin of nearly every URL the crawl stores, as urlsplit reads it
#: (scheme, then the netloc up to the path, query or fragment) and already
#: in lower case: read without urlsplit, which costs ~4x as much, once for
#: each request stored (tests/test_frontier_state.py checks it against urlsplit)
_PLAIN_ORIGIN = re.compile(r"https?://[a-z0-9.:-]*(?=[/?#]|\Z)")


@dataclass(frozen=True, slots=True)
class StoredRequest:
    """A request as the crawl state keeps it: plain data."""

    #: de-duplication key (webspider.frontier.dupefilter.request_key)
    key: str
    #: URL as found (often equal to ``key``)
    url: str
    depth: int = 0
    round: int = 0
    #: the page it was found on
    referer: str | None = None
    #: link kind ("page", "requisite", …)
    kind: str = "page"
    priority: int = 0
    #: GET or HEAD (a link check)
    method: str = "GET"
    #: the rest of its meta: values a JSON encoder can write
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        """``scheme://host[:port]``: the unit of breadth-first order."""
        plain = _PLAIN_ORIGIN.match(self.url)
        if plain is not None:
            return plain.group()
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}".lower()

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "url": self.url,
            "depth": self.depth,
            "round": self.round,
            "referer": self.referer,
            "kind": self.kind,
            "priority": self.priority,
            "method": self.method,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StoredRequest:
        return cls(
            key=data["key"],
            url=data["url"],
            depth=int(data.get("depth", 0)),
            round=int(data.get("round", 0)),
            referer=data.get("referer"),
            kind=data.get("kind", "page"),
            priority=int(data.get("priority", 0)),
            method=data.get("method", "GET"),
            meta=dict(data.get("meta") or {}),
        )


@dataclass(frozen=True, slots=True)
class Lease:
    """A request handed out by ``CrawlState.lease``."""

    #: the ticket to ``ack``/``release``/``renew`` it with
    ticket: int
    request: StoredRequest
    #: time.time() after which ``expire`` puts it back in the queue
    deadline: float


@dataclass(frozen=True, slots=True)
class Counts:
    """How many keys are in each part of the state."""

    queued: int
    leased: int
    done: int
    deferred: int

    @property
    def seen(self) -> int:
        return self.queued + self.leased + self.done


class CrawlState(Protocol):
    """The crawl state; see the module docstring."""

    # -- the seen-set ---------------------------------------------------------------
    def __contains__(self, key: str, /) -> bool:
        """Whether ``key`` was ever queued (deferred keys are not seen)."""
        ...

    def __len__(self) -> int:
        """Number of keys seen."""
        ...

    def contains_many(self, keys: Sequence[str]) -> list[bool]:
        """``[key in state for key in keys]``, in one round trip."""
        ...

    # -- the queue and leases ---------------------------------------------------------
    def add(self, requests: Sequence[StoredRequest]) -> list[bool]:
        """Queue the requests whose key was not seen; True for each queued.
        A deferred key is queued (and leaves the deferred frontier)."""
        ...

    def lease(
        self,
        n: int,
        *,
        deadline: float,
        strict: bool = True,
        max_depth: int | None = None,
        skip_origins: Iterable[str] = (),
    ) -> list[Lease]:
        """Hand out up to ``n`` queued requests, taking turns over origins.

        Within an origin the shallowest first; with ``strict`` an origin's
        requests of depth d wait while it has a lease of a smaller depth
        (the level barrier). ``max_depth`` holds every deeper request (the
        scheduler holds depth 1 until all start URLs are queued);
        ``skip_origins`` are not served this time (their slot is full)."""
        ...

    def ack(self, tickets: Iterable[int]) -> None:
        """The leased requests are done (fetched, or dropped for good)."""
        ...

    def release(self, tickets: Iterable[int]) -> None:
        """Put leased requests back at the head of their origin's queue."""
        ...

    def renew(self, tickets: Iterable[int], deadline: float) -> None: ...

    def expire(self, now: float) -> int:
        """Release the leases whose deadline is before ``now``; how many."""
        ...

    def release_all(self) -> int:
        """Release every lease (on resume: their holder is gone); how many."""
        ...

    def leased_depths(self, origin: str) -> list[int]:
        """Depths of the requests of ``origin`` leased now (sorted)."""
        ...

    # -- the deferred frontier and rounds ---------------------------------------------
    def defer(self, requests: Sequence[StoredRequest]) -> list[bool]:
        """Keep requests for a later round; False for a key already seen or
        already deferred."""
        ...

    def deferred_round(self, key: str) -> int | None:
        """The round ``key`` was deferred in; None when it is not deferred."""
        ...

    def iter_deferred(self) -> Iterator[StoredRequest]:
        """Every deferred request, oldest first, streamed."""
        ...

    @property
    def round(self) -> int: ...

    def next_round(self) -> int:
        """Start the next round: every request deferred before it is queued
        at depth 0 with the new round; returns how many (0: no round
        started, nothing was deferred)."""
        ...

    def counts(self) -> Counts: ...

    # -- records ---------------------------------------------------------------------
    def records(self, name: str) -> Records:
        """The namespace of records ``name`` (webspider.records), created on
        first use, written in this state's transaction."""
        ...

    # -- metadata and outputs ---------------------------------------------------
    def get_meta(self, name: str) -> str | None: ...

    def set_meta(self, name: str, value: str) -> None: ...

    def get_offset(self, output: str) -> int:
        """Committed length of an output file (0 when never set)."""
        ...

    def set_offset(self, output: str, offset: int) -> None: ...

    # -- durability -------------------------------------------------------------
    def commit(self) -> None:
        """Make everything written so far durable, as one transaction."""
        ...

    def close(self) -> None:
        """Commit and close."""
        ...

    def abandon(self) -> None:
        """Close without committing: the state is left as a kill would leave
        it (a write the disk refused stopped the crawl, webspider.storage)."""
        ...
