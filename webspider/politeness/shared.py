"""Politeness for all the workers of one crawl together (a Redis crawl state).

With ``WEBSPIDER_STATE=redis://…`` several webspider processes crawl one
crawl; each would otherwise fetch every robots.txt itself and space its own
requests only, so N workers would hit a site N times as often as its
Crawl-delay asks. One ``SharedPoliteness`` per crawler (``shared_store``)
keeps what must hold for all of them in Redis (webspider.politeness.
redisstore), measured by the Redis server's clock:

- robots.txt (``obtain``, the RobotsStore of the robots.txt middleware): the
  first worker to need an origin's rules claims the fetch and stores the
  record (JSON); the others wait for it, polling, and parse the same text.
  A worker that dies while fetching lets the claim run out after
  ``WEBSPIDER_STATE_LEASE_TIMEOUT`` seconds; the next one fetches.
- starts (``turn``, called by the politeness middleware for every request
  of the worker): one reservation per request, atomic in Redis, of the next
  start at the origin — ``max(Crawl-delay, DOWNLOAD_DELAY)`` after the last
  one any worker reserved, never during a Retry-After pause — and of a
  place among ``CONCURRENT_REQUESTS_PER_DOMAIN`` requests in flight at the
  origin across all workers. The request waits for its start (without a
  place in CONCURRENT_REQUESTS, see .waiting), then confirms it (``go``):
  when the start before it went late (its worker was busy, the machine
  loaded), it waits on until the delay has passed since that start was
  made, so the gaps the server sees hold, not only the reserved ones. A place is
  released when the request leaves the downloader (``done``), sent with
  the worker's next ``turn`` (one round trip for both) or on its own
  after ``RELEASE_AFTER`` (5 ms) when none comes; places and
  claims are leases renewed every third of the lease timeout while the
  worker lives.
- pauses (``pause``): a Retry-After seen by one worker pauses the origin for
  all.

Within a worker, the requests of one origin wait in line (one asks Redis at
a time) so a long wait costs one Redis call per start, not a poll per
request.

When Redis cannot be reached, the call is retried with a doubling wait (up
to ``MAX_BACKOFF``), the requests concerned wait, and one warning is logged
per outage (and one line when it is back): politeness never fails open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
from collections import deque
from dataclasses import dataclass, field
from time import monotonic
from typing import TYPE_CHECKING, Any, TypeVar

from redis import Redis
from redis.exceptions import BusyLoadingError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from scrapy import signals as scrapy_signals
from scrapy.utils.asyncio import call_later, create_looping_call, sleep
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred

from webspider.internals import engine_closing
from webspider.politeness.options import PolitenessOptions
from webspider.politeness.redisstore import (
    BUSY,
    CLAIMED,
    GO,
    PAUSED,
    RECORD,
    RedisPoliteness,
)
from webspider.politeness.robotsstore import Obtained, RobotsRecord
from webspider.politeness.waiting import CrawlClosing

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult

    from webspider.utils.url import Origin

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

STATS_REDIS_DOWN = "webspider/politeness/redis_unreachable_count"
STATS_SHARED_WAITED = "webspider/politeness/shared_waited_request_count"
STATS_SHARED_PAUSE = "webspider/politeness/shared_pause_count"
#: reserved starts that waited on, the start before them having gone late
STATS_SHARED_PUSHED_BACK = "webspider/politeness/shared_pushed_back_count"
STATS_BAD_RECORD = "webspider/robotstxt/bad_shared_record_count"

#: first and longest wait between attempts to reach Redis, seconds (as the
#: Redis crawl state waits)
FIRST_BACKOFF = 0.1
MAX_BACKOFF = 5.0
#: the first wait between polls (another worker's robots.txt fetch, a free
#: place at a busy origin), doubling up to MAX_POLL
FIRST_POLL = 0.05
MAX_POLL = 1.0
#: longest sleep between checks that the crawl is not closing
CLOSE_CHECK = 5.0
#: seconds Redis has to answer before the call counts as failed
SOCKET_TIMEOUT = 5.0
#: seconds a place given back waits for this worker's next ``turn`` to go
#: with it (one round trip for both) before it is sent on its own
RELEASE_AFTER = 0.005
REDIS_ERRORS = (RedisConnectionError, RedisTimeoutError, BusyLoadingError, OSError)


@dataclass
class _Line:
    """The requests of one origin waiting for a start, in this worker."""

    waiting: deque[tuple[Request, float, Deferred[None]]] = field(default_factory=deque)
    running: bool = False


class SharedPoliteness:
    def __init__(self, crawler: Crawler, url: str, client: Redis | None = None) -> None:
        self.crawler = crawler
        options = PolitenessOptions.of(crawler.settings)
        self.lease_timeout = options.lease_timeout
        self.limit = max(0, crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"))
        if client is None:
            client = Redis.from_url(
                url,
                socket_timeout=SOCKET_TIMEOUT,
                socket_connect_timeout=SOCKET_TIMEOUT,
            )
        self.store = RedisPoliteness(client)
        #: this worker, in the tokens of its claims and places
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._serial = 0
        #: robots.txt fetches this worker holds the claim of (origin key → token)
        self.claims: dict[str, str] = {}
        #: places held by requests of this worker: request → (origin key, token)
        self.leases: dict[Request, tuple[str, str]] = {}
        #: places held while their request waits for its start (token → key)
        self._reserved: dict[str, str] = {}
        self._lines: dict[str, _Line] = {}
        #: places given back, not sent yet: (origin key, token)
        self._to_release: list[tuple[str, str]] = []
        self._release_call: CallLaterResult | None = None
        #: monotonic time Redis went away (None: reachable)
        self._down: float | None = None
        self._renewal = create_looping_call(self._renew)
        crawler.signals.connect(self._opened, scrapy_signals.engine_started)
        crawler.signals.connect(self._closed, scrapy_signals.engine_stopped)

    def _token(self) -> str:
        self._serial += 1
        return f"{self.worker}:{self._serial}"

    # -- Redis, through outages ---------------------------------------------------
    async def call(self, func: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``func(*args, **kwargs)``, retried while Redis is unreachable."""
        attempt = 0
        while True:
            try:
                result = func(*args, **kwargs)
            except REDIS_ERRORS as exc:
                self._failed(exc)
                if engine_closing(self.crawler.engine):
                    raise CrawlClosing() from None
                await sleep(min(MAX_BACKOFF, FIRST_BACKOFF * 2**attempt))
                attempt += 1
                continue
            if self._down is not None:
                logger.warning(
                    "Redis is back after %.1f s: shared politeness resumes",
                    monotonic() - self._down,
                )
                self._down = None
            return result

    def _failed(self, exc: Exception) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_REDIS_DOWN)
        if self._down is None:
            self._down = monotonic()
            # the exception's text is not shown: it may hold the URL
            logger.warning(
                "Redis unreachable (%s): requests waiting for robots.txt or "
                "their turn at an origin wait for it",
                type(exc).__name__,
            )

    # -- robots.txt ---------------------------------------------------------------
    async def obtain(
        self,
        origin: Origin,
        fetch: Callable[[], Awaitable[RobotsRecord]],
        ttl: float,
    ) -> Obtained:
        key = origin_key(origin)
        poll = FIRST_POLL
        while True:
            token = self._token()
            answer, data, fresh_for = await self.call(
                self.store.robots_claim, key, token, self.lease_timeout
            )
            if answer == RECORD and data is not None:
                try:
                    return Obtained(RobotsRecord.from_json(data), fresh_for, False)
                except ValueError as exc:
                    # never used, never executed: fetched again
                    self._inc(STATS_BAD_RECORD)
                    logger.warning(
                        "robots.txt record of %s in Redis is unreadable (%s): "
                        "fetching it again",
                        key,
                        exc,
                    )
                    await self.call(self.store.robots_forget, key)
                    continue
            if answer == CLAIMED:
                return await self._fetch(key, token, fetch, ttl)
            if engine_closing(self.crawler.engine):
                raise CrawlClosing()
            await sleep(poll)
            poll = min(MAX_POLL, poll * 2)

    async def _fetch(
        self,
        key: str,
        token: str,
        fetch: Callable[[], Awaitable[RobotsRecord]],
        ttl: float,
    ) -> Obtained:
        self.claims[key] = token
        try:
            record = await fetch()
        except BaseException:
            self.claims.pop(key, None)
            with contextlib.suppress(*REDIS_ERRORS):  # else it runs out
                self.store.robots_unclaim(key, token)
            raise
        try:
            await self.call(self.store.robots_put, key, record.to_json(), ttl, token)
        finally:
            self.claims.pop(key, None)
        return Obtained(record, ttl, True)

    # -- starts -------------------------------------------------------------------
    def turn(self, request: Request, origin: Origin, delay: float) -> Deferred[None]:
        """Fires when ``request`` may start (errback CrawlClosing when the
        crawl closes first); it then holds a place until ``done``."""
        key = origin_key(origin)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _Line()
        waiter: Deferred[None] = Deferred()
        line.waiting.append((request, delay, waiter))
        if not line.running:
            line.running = True
            deferred_from_coro(self._serve(key, line))
        return waiter

    def try_turn(self, request: Request, origin: Origin, delay: float) -> bool:
        """Take a start at once when one is free now (the usual case without
        a delay: one Redis call, no waiting); False: wait with ``turn``."""
        if delay > 0:
            return False  # a reserved start is waited for in line
        key = origin_key(origin)
        line = self._lines.get(key)
        if line is not None and line.running:
            return False  # others of this origin wait before it
        token = self._token()
        try:
            verdict, seconds = self._turn(key, token, delay)
        except REDIS_ERRORS as exc:
            self._failed(exc)
            return False
        if verdict != GO:
            return False
        self.leases[request] = (key, token)
        if seconds > 0:
            # reserved, but not now: wait for it in line
            self.leases.pop(request)
            self._release(key, token)
            return False
        return True

    def _turn(self, key: str, token: str, delay: float) -> tuple[str, float]:
        """The store's ``turn``, giving back the places waiting to be (when
        Redis fails, they wait for the next call)."""
        places, self._to_release = self._to_release, []
        try:
            return self.store.turn(
                key,
                token,
                delay=delay,
                limit=self.limit,
                lease_timeout=self.lease_timeout,
                release=places,
            )
        except BaseException:
            self._to_release[:0] = places
            raise

    async def _serve(self, key: str, line: _Line) -> None:
        try:
            while line.waiting:
                request, delay, waiter = line.waiting[0]
                try:
                    token = await self._start(key, delay)
                except CrawlClosing:
                    self._drop(line)
                    return
                line.waiting.popleft()
                self.leases[request] = (key, token)
                waiter.callback(None)
        finally:
            line.running = False
            if not line.waiting:
                self._lines.pop(key, None)

    async def _start(self, key: str, delay: float) -> str:
        poll = FIRST_POLL
        while True:
            if engine_closing(self.crawler.engine):
                raise CrawlClosing()
            token = self._token()
            verdict, seconds = await self.call(self._turn, key, token, delay)
            if verdict == GO:
                if seconds <= 0:
                    return token
                self._inc(STATS_SHARED_WAITED)
                if await self._wait_reserved(key, token, delay, seconds):
                    return token
                self._release(key, token)  # a pause began: wait for it too
                continue
            if verdict == PAUSED:
                await sleep(min(seconds, CLOSE_CHECK))
                continue
            assert verdict == BUSY
            await sleep(poll)
            poll = min(MAX_POLL, poll * 2)

    async def _wait_reserved(
        self, key: str, token: str, delay: float, seconds: float
    ) -> bool:
        """Wait ``seconds`` for a reserved start, then confirm it (``go``):
        True to start now, False when a pause began meanwhile. The start
        before it may have gone late (its worker busy, the machine loaded):
        then this one waits on, so that the starts made are ``delay`` apart,
        not only the starts reserved. The place is held (and renewed)
        meanwhile."""
        self._reserved[token] = key
        try:
            while True:
                await self._sleep(seconds)
                verdict, seconds = await self.call(self.store.go, key, delay)
                if verdict == GO:
                    return True
                if verdict == PAUSED:
                    return False
                self._inc(STATS_SHARED_PUSHED_BACK)
        except CrawlClosing:
            self._release(key, token)
            raise
        finally:
            self._reserved.pop(token, None)

    async def _sleep(self, seconds: float) -> None:
        while seconds > 0:
            step = min(seconds, CLOSE_CHECK)
            await sleep(step)
            seconds -= step
            if seconds > 0 and engine_closing(self.crawler.engine):
                raise CrawlClosing()

    def _drop(self, line: _Line) -> None:
        waiting, line.waiting = line.waiting, deque()
        for _request, _delay, waiter in waiting:
            waiter.errback(CrawlClosing())

    def done(self, request: Request) -> None:
        """``request`` left the downloader: free its place."""
        held = self.leases.pop(request, None)
        if held is not None:
            self._release(*held)

    def _release(self, key: str, token: str) -> None:
        # Sent with this worker's next turn, which usually comes within a
        # few milliseconds (the downloader starts the next request), else
        # on its own: a round trip a request saved. Meanwhile the place is
        # still counted, which errs on the polite side.
        self._to_release.append((key, token))
        if self._release_call is None:
            self._release_call = call_later(RELEASE_AFTER, self._send_releases)

    def _send_releases(self) -> None:
        self._release_call = None
        places, self._to_release = self._to_release, []
        if not places:
            return
        try:
            self.store.release_many(places)
        except REDIS_ERRORS as exc:
            self._failed(exc)  # the places come free when their leases run out

    # -- pauses -------------------------------------------------------------------
    def pause(self, origin: Origin, seconds: float) -> None:
        """No worker starts a request at ``origin`` for ``seconds``."""
        try:
            if self.store.pause(origin_key(origin), seconds):
                self._inc(STATS_SHARED_PAUSE)
        except REDIS_ERRORS as exc:
            self._failed(exc)  # this worker still pauses its own requests

    # -- leases kept alive --------------------------------------------------------
    def _renew(self) -> None:
        claims = list(self.claims.items())
        leases = list(self.leases.values())
        leases += [(key, token) for token, key in self._reserved.items()]
        if not claims and not leases:
            return
        try:
            self.store.renew(claims, leases, self.lease_timeout)
        except REDIS_ERRORS as exc:
            self._failed(exc)

    def _opened(self) -> None:
        self._renewal.start(self.lease_timeout / 3, now=False)

    def _closed(self) -> None:
        if self._renewal.running:
            self._renewal.stop()
        if self._release_call is not None:
            self._release_call.cancel()
            self._release_call = None
        held = [*self._to_release, *self.leases.values()]
        self._to_release = []
        self.leases.clear()
        try:
            self.store.release_many(held)
            for key, token in list(self.claims.items()):
                self.store.robots_unclaim(key, token)
        except RedisError:
            pass  # they run out
        self.store.client.close()

    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)


def origin_key(origin: Origin) -> str:
    scheme, host, port = origin
    return f"{scheme}://{host}:{port}"
