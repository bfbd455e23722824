"""Crawler traps, recognised from URLs alone.

Pure: no Scrapy. The rules, each with its own skip reason (webspider.skips)
and setting (webspider.bounds.options):

- ``repeated_segments``: a path segment, or a run of segments, repeated more
  than ``max_repeats`` times in a row (``/a/a/a/``, ``/x/y/x/y/x/y/``), as
  Heritrix's PathologicalPathDecideRule: a relative link to a folder that
  answers every path (``a/`` on ``/a/``) otherwise goes on until the URL
  length limit, a thousand levels later.
- ``Counter``: how many of something (distinct query strings of a path,
  requests to a host) were let through, against a bound: a calendar page
  linking next month (``/cal?month=N`` → ``N+1``) never ends. Counts are
  records (webspider.records): in the crawl state, so a resumed crawl goes on
  counting, and they cost no memory per path.
"""

from __future__ import annotations

import hashlib
from base64 import urlsafe_b64encode
from typing import TYPE_CHECKING

from webspider.records import MemoryRecords

if TYPE_CHECKING:
    from webspider.records import Records


def repeated_segments(path: str, max_repeats: int) -> bool:
    """Whether some run of 1 or more segments of ``path`` comes more than
    ``max_repeats`` times in a row (``max_repeats`` 0: never)."""
    if max_repeats <= 0:
        return False
    segments = [segment for segment in path.split("/") if segment]
    count = len(segments)
    if count <= max_repeats or len(set(segments)) == count:
        return False  # most paths: no segment comes twice
    for period in range(1, count // (max_repeats + 1) + 1):
        # a run of ``period`` segments repeated k times in a row is
        # period * (k - 1) places in a row where a segment equals the one
        # ``period`` places further on
        needed = period * max_repeats
        run = 0
        for i in range(count - period):
            if segments[i] == segments[i + period]:
                run += 1
                if run >= needed:
                    return True
            else:
                run = 0
    return False


class Counter:
    """Counts per key (a path, a host), against ``limit``, in ``records``
    (in memory without). Keys are kept by a 96-bit digest: a crawl may count
    millions of long paths."""

    def __init__(self, limit: int, records: Records | None = None) -> None:
        self.limit = limit
        self.records: Records = records if records is not None else MemoryRecords()

    def full(self, key: str) -> bool:
        """Whether ``key`` was counted ``limit`` times already."""
        return int(self.records.get(digest(key)) or 0) >= self.limit

    def add(self, key: str) -> None:
        self.records.incr(digest(key))


def digest(key: str) -> str:
    """16 characters standing for ``key`` (a record's key)."""
    raw = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=12)
    return urlsafe_b64encode(raw.digest()).decode("ascii")
