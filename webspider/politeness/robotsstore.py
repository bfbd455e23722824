"""Where an origin's robots.txt answer is kept: the seam between fetching it
and sharing it.

The robots.txt middleware asks a ``RobotsStore`` for an origin's record and
hands it the coroutine that fetches one. One crawl process keeps the
records in its crawl state (webspider.politeness.robotsrecords: a resumed
crawl reads what it fetched before); webspider.politeness.shared's store
(several workers on one Redis crawl state) lets the first worker that needs
an origin fetch it and the others read what it stored.

A ``RobotsRecord`` is what the fetch found, as plain data: the outcome, the
text of robots.txt (not the parsed rules: each worker parses it, so a
stored value is never code), the final HTTP status and the fetch time.
``RobotsRecord.from_json`` refuses anything else (``ValueError``).

Pure: standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from webspider.utils.url import Origin

#: outcomes (the robots.txt middleware's states of an origin, once known)
READY = "ready"
UNREACHABLE = "unreachable"
#: the address policy refused the origin's address
REFUSED = "refused"
#: unreachable because the host name did not resolve (on every attempt)
UNRESOLVED = "unresolved"
OUTCOMES = frozenset({READY, UNREACHABLE, REFUSED, UNRESOLVED})

#: bumped when the record's layout changes; another version is fetched anew
RECORD_VERSION = 1


@dataclass(frozen=True, slots=True)
class RobotsRecord:
    """One origin's robots.txt, as fetched."""

    outcome: str
    #: robots.txt as parsed (READY); None: no rules (a 4xx, or not READY)
    text: str | None = None
    #: why the origin is unreachable or refused (for the log)
    reason: str = ""
    #: HTTP status of the final answer (None: no answer)
    status: int | None = None
    #: time.time() of the fetch
    fetched: float = 0.0

    def to_json(self) -> str:
        return json.dumps(
            {
                "v": RECORD_VERSION,
                "outcome": self.outcome,
                "text": self.text,
                "reason": self.reason,
                "status": self.status,
                "fetched": self.fetched,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, data: str | bytes) -> RobotsRecord:
        """The record ``to_json`` wrote; ValueError for anything else."""
        try:
            value = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(value, dict) or value.get("v") != RECORD_VERSION:
            raise ValueError("not a robots.txt record of this version")
        outcome = value.get("outcome")
        text = value.get("text")
        reason = value.get("reason", "")
        status = value.get("status")
        fetched = value.get("fetched", 0.0)
        if (
            outcome not in OUTCOMES
            or not (text is None or isinstance(text, str))
            or not isinstance(reason, str)
            or not (status is None or _is_int(status))
            or not (_is_int(fetched) or isinstance(fetched, float))
        ):
            raise ValueError("a robots.txt record with a field of the wrong type")
        return cls(outcome, text, reason, status, float(fetched))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Obtained:
    record: RobotsRecord
    #: seconds the record stays valid from now
    fresh_for: float
    #: fetched by this process (False: read from what another worker stored)
    fetched_here: bool


class RobotsStore(Protocol):
    async def obtain(
        self,
        origin: Origin,
        fetch: Callable[[], Awaitable[RobotsRecord]],
        ttl: float,
    ) -> Obtained:
        """The origin's record: one kept (by anyone) for less than ``ttl``
        seconds, else what ``fetch`` returns, kept for ``ttl``."""
        ...
