"""A priority queue that is breadth-first by construction.

Scrapy gets breadth-first order from ``DEPTH_PRIORITY = 1``: a request's
priority goes down by its depth. That mixes depth with every other priority
adjustment (a retried request gets ``RETRY_PRIORITY_ADJUST = -1`` and lands
behind the next level), and the scheduler cannot tell a queue's depth without
unpickling a request. Here the queue key is the depth first and the request's
priority second, so requests leave strictly level by level (FIFO within a
level and priority), and the depth of the next request is read off the key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.pqueues import ScrapyPriorityQueue

from webspider.internals import priority_queues

if TYPE_CHECKING:
    from scrapy import Request

#: priorities are clamped to a signed 16-bit range within a depth
_PRIORITY_BITS = 16
_PRIORITY_MAX = (1 << (_PRIORITY_BITS - 1)) - 1
_PRIORITY_MIN = -(1 << (_PRIORITY_BITS - 1))


def queue_key(depth: int, priority: int) -> int:
    """Lower keys leave first: shallower first, then higher priority."""
    priority = min(max(priority, _PRIORITY_MIN), _PRIORITY_MAX)
    return (max(depth, 0) << _PRIORITY_BITS) + (_PRIORITY_MAX - priority)


def key_depth(key: int) -> int:
    return key >> _PRIORITY_BITS


class DepthPriorityQueue(ScrapyPriorityQueue):
    """SCHEDULER_PRIORITY_QUEUE for webspider (see module docstring)."""

    def priority(self, request: Request) -> int:
        return queue_key(request.meta.get("depth", 0), request.priority)

    def head_key(self) -> int | None:
        """Key of the next request ``pop`` returns (None when empty).

        ``curprio`` may lag behind after a pop empties a queue, so the key is
        taken over the non-empty queues (there are a handful: one per level)."""
        keys = [
            key
            for queues in priority_queues(self)
            for key, queue in queues.items()
            if queue
        ]
        return min(keys) if keys else None

    def head_depth(self) -> int | None:
        key = self.head_key()
        return None if key is None else key_depth(key)
