"""robots.txt answers kept in the crawl state, as records.

A RobotsStore (webspider.politeness.robotsstore) over the records namespace
``politeness.robots`` (webspider.records): origin (``scheme://host:port``) →
the RobotsRecord as JSON (the text of robots.txt, not parsed rules: a stored
value is never code; the final status; the fetch time, ``time.time()``).

An origin's answer is read from the store when it was fetched less than the
TTL ago (WEBSPIDER_ROBOTSTXT_CACHE_TTL; RFC 9309 2.4 lets a crawler use a
cached robots.txt for up to 24 hours), else fetched and stored. So a resumed
crawl does not fetch again the robots.txt it already has, and thousands of
origins cost no memory (the robots.txt middleware keeps the parsed rules of
the most recently used ones only). Only answers that were read (2xx, or 4xx:
no rules) are stored: an origin that was unreachable, or whose address was
refused, is tried again by a resumed crawl. A record that does not read
back as one (another version) is fetched again.

Without a crawl state (another SCHEDULER) the records are in memory.

Pure: standard library only.
"""

from __future__ import annotations

import json
from time import time
from typing import TYPE_CHECKING

from webspider.politeness.robotsstore import READY, Obtained, RobotsRecord
from webspider.records import records_or_memory

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from webspider.records import RecordStore
    from webspider.utils.url import Origin

NS_ROBOTS = "politeness.robots"


def origin_key(origin: Origin) -> str:
    scheme, host, port = origin
    return f"{scheme}://{host}:{port}"


class RecordsRobotsStore:
    """robots.txt records in ``store`` (in memory without one)."""

    def __init__(self, store: RecordStore | None = None) -> None:
        self.records = records_or_memory(store).records(NS_ROBOTS)

    def stored(self, origin: Origin, ttl: float) -> tuple[RobotsRecord, float] | None:
        """The origin's stored record and the seconds it stays fresh, or
        None when there is none fresh."""
        value = self.records.get(origin_key(origin))
        if value is None:
            return None
        try:
            record = RobotsRecord.from_json(json.dumps(value))
        except ValueError:
            return None
        age = time() - record.fetched
        if not 0 <= age < ttl:
            return None  # stale, or the clock went back
        return record, ttl - age

    async def obtain(
        self,
        origin: Origin,
        fetch: Callable[[], Awaitable[RobotsRecord]],
        ttl: float,
    ) -> Obtained:
        found = self.stored(origin, ttl)
        if found is not None:
            return Obtained(found[0], found[1], False)
        record = await fetch()
        if record.outcome == READY:
            self.records.put(origin_key(origin), json.loads(record.to_json()))
        return Obtained(record, ttl, True)
