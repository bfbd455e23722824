"""The two timers of a shared state's worker (``WEBSPIDER_STATE``, Redis).

Leases of a shared state last ``WEBSPIDER_STATE_LEASE_TIMEOUT`` seconds:
``LeaseHeartbeat`` renews this worker's every quarter of that and expires
the late leases of workers that died, so their requests go back to the
queue.

A worker with nothing to lease while other workers hold leases waits
(StateScheduler.has_pending_requests, webspider.frontier.scheduler). What
ends the wait (another worker's ack opening a level, its new links) happens
in another process, unseen by Scrapy's engine, which asks again only when a
request of its own finishes or on its 5-second heartbeat: so the scheduler
of an idle worker (no request out) wakes the engine itself with
``EngineWaker`` (WAKE_FIRST, doubling to WAKE_MAX while it gets nothing;
the scheduler sets ``delay`` back to WAKE_FIRST when it leases again).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy.utils.asyncio import call_later
from twisted.internet.task import LoopingCall

from webspider.internals import wake_engine

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult

    from webspider.frontier.redisstate import RedisState

#: seconds after which a shared state's worker that got nothing to lease
#: asks again, doubling up to WAKE_MAX while it gets nothing (another worker
#: may open a level or add requests any moment: polling the state costs one
#: small script a worker every WAKE_MAX at most)
WAKE_FIRST = 0.025
WAKE_MAX = 0.2


class LeaseHeartbeat:
    """Renews a worker's leases of ``state`` and expires dead workers'."""

    def __init__(self, state: RedisState, lease_seconds: float) -> None:
        self.state = state
        self.lease_seconds = lease_seconds
        self._loop = LoopingCall(self.beat)
        self._loop.start(lease_seconds / 4, now=False)

    def beat(self) -> None:
        """Renew this worker's leases, and put back those of dead workers."""
        state = self.state
        now = time.time()
        held = list(state.held)
        if held:
            state.renew(held, now + self.lease_seconds)
        state.expire(now)

    def stop(self) -> None:
        if self._loop.running:
            self._loop.stop()


class EngineWaker:
    """Has the engine ask the scheduler again soon (a shared state's worker
    with nothing to lease now)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        #: seconds until the next wake-up asked for
        self.delay = WAKE_FIRST
        self._call: CallLaterResult | None = None

    def later(self) -> None:
        """Wake the engine in ``delay`` seconds (once: a wake-up pending
        stands), and double the delay for the next one."""
        if self._call is not None:
            return
        self._call = call_later(self.delay, self._wake_up)
        self.delay = min(self.delay * 2, WAKE_MAX)

    def _wake_up(self) -> None:
        self._call = None
        wake_engine(self.crawler.engine)

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None
