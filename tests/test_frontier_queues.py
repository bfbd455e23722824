from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.squeues import FifoMemoryQueue
from scrapy.utils.test import get_crawler

from webspider.frontier.queues import DepthPriorityQueue, key_depth, queue_key


@pytest.mark.parametrize(
    ("a", "b"),  # (depth, priority): a leaves before b
    [
        ((0, 0), (1, 0)),
        ((1, 0), (2, 100)),  # depth first, whatever the priority
        ((1, -1), (2, 0)),  # a retried request (priority -1) stays in its level
        ((1, 2), (1, 0)),  # a redirected one (+2) goes first within its level
        ((3, 10**9), (3, 0)),  # priorities are clamped, not overflowing
        ((3, -(10**9)), (4, 10**9)),
    ],
)
def test_queue_key_orders_by_depth_then_priority(a, b):
    assert queue_key(*a) < queue_key(*b)
    assert key_depth(queue_key(*a)) == a[0]


def test_pops_level_by_level_and_reports_the_head_depth():
    pq = DepthPriorityQueue(get_crawler(), FifoMemoryQueue, "")
    for url, depth, prio in [("c", 2, 5), ("a", 1, 0), ("r", 1, -1), ("b", 1, 0)]:
        pq.push(Request(f"http://x/{url}", priority=prio, meta={"depth": depth}))
    order = []
    while (depth := pq.head_depth()) is not None:
        request = pq.pop()
        assert request.meta["depth"] == depth
        order.append(request.url[-1])
    assert order == ["a", "b", "r", "c"]
