"""Per-origin spacing: robots.txt ``Crawl-delay`` and ``Retry-After`` pauses.

Two layers, per downloader slot (one per host, ``Downloader.get_slot_key``):

- the turn: in ``process_request`` the requests of a slot with a
  Crawl-delay or a pause wait their turn (a StartGate, one request per
  delay, none during a pause) in a waiting room that holds no place in
  CONCURRENT_REQUESTS (see .waiting) — had they waited in the slot's queue,
  a slow host would fill the downloader and stop every other host;
- the guarantee: the slot itself gets the delay (Scrapy starts one request
  per slot delay whatever CONCURRENT_REQUESTS_PER_DOMAIN says) and is held
  during a pause, which also stops the requests already queued in it when
  the 429 came back.

- Crawl-delay (announced by the robots.txt middleware): the slot's delay
  becomes ``max(Crawl-delay, DOWNLOAD_DELAY)`` with no random jitter, so
  consecutive request starts are at least that far apart. A Crawl-delay above
  ``WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX`` is cut to it with a warning, or,
  with ``WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX = "skip"``, the origin is
  not crawled (reason ``crawl_delay``).
- A 429 or 503 with ``Retry-After`` (seconds or an HTTP date) pauses the
  slot for that long (at most ``WEBSPIDER_POLITENESS_RETRY_AFTER_MAX``); the
  request is retried after the pause; other hosts carry on. After
  ``WEBSPIDER_POLITENESS_RETRY_TIMES`` such retries the response goes on to
  the spider as the failure it is (an HttpError, counted as a failed page).
  429/503 without Retry-After are left to Scrapy's RetryMiddleware.

With a crawl state shared by several workers (``WEBSPIDER_STATE=redis://…``)
the turn and the pause are kept for all workers together instead
(webspider.politeness.shared): each request reserves its start and a place
at its origin in Redis, the slots add no delay of their own, and a
Retry-After pauses the origin for every worker.

Settings: the four above, ``WEBSPIDER_POLITENESS_ENABLED``, ``DOWNLOAD_DELAY``,
``CONCURRENT_REQUESTS_PER_DOMAIN`` (shared: for all workers together).
Meta keys: ``webspider_retry_after_times`` (retries so far, set here).
Stats: ``webspider/politeness/<event>_count`` (the STATS_* constants).
"""

from __future__ import annotations

import logging
from collections import deque
from time import monotonic, time
from typing import TYPE_CHECKING

from scrapy import signals as scrapy_signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.asyncio import call_later
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from webspider import signals, skips
from webspider.internals import (
    engine_closing,
    process_slot_queue,
    set_slot_latercall,
    slot_latercall,
    start_slot_delay_now,
)
from webspider.keys import META_RETRY_AFTER_TIMES, META_ROBOTSTXT
from webspider.politeness.options import PolitenessOptions
from webspider.politeness.retryafter import retry_after_seconds
from webspider.politeness.sharing import shared_store
from webspider.politeness.waiting import CrawlClosing, StartGate, WaitingRoom
from webspider.utils.url import Origin, origin_of_parts

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.utils.asyncio import CallLaterResult
    from typing_extensions import Self

logger = logging.getLogger(__name__)

STATS_CRAWL_DELAY = "webspider/politeness/crawl_delay_origin_count"
STATS_CRAWL_DELAY_CAPPED = "webspider/politeness/crawl_delay_capped_count"
STATS_PAUSED = "webspider/politeness/retry_after_pause_count"
STATS_RETRIED = "webspider/politeness/retry_after_retried_count"
STATS_GAVE_UP = "webspider/politeness/retry_after_gave_up_count"
STATS_MAX_PAUSE = "webspider/politeness/retry_after_max_seconds"
STATS_WAITED = "webspider/politeness/waited_request_count"
STATS_DROPPED_AT_CLOSE = "webspider/politeness/dropped_at_close_count"
#: seconds between checks, while requests wait, that the crawl is not closing
CLOSE_CHECK = 5.0

BACKPRESSURE_STATUSES = frozenset({429, 503})


class PolitenessMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = PolitenessOptions.of(settings)
        if not options.enabled:
            raise NotConfigured
        self.max_crawl_delay = options.crawl_delay_max
        self.over_max = options.crawl_delay_over_max
        self.max_pause = options.retry_after_max
        self.retry_times = options.retry_after_times
        self.download_delay = settings.getfloat("DOWNLOAD_DELAY")
        #: effective Crawl-delay per origin (origins without one are absent)
        self.delays: dict[Origin, float] = {}
        #: download slots given their Crawl-delay, by key (Scrapy drops idle
        #: slots, and makes a new one if the host comes back)
        self._delayed_slots: dict[str, Slot] = {}
        #: origins not crawled because their Crawl-delay is over the cap
        self.skipped_origins: set[Origin] = set()
        #: downloader slot key → monotonic time its Retry-After pause ends
        self.paused: dict[str, float] = {}
        self._holds: dict[str, CallLaterResult] = {}
        #: slot key → the turn of requests waiting for its next start
        self._gates: dict[str, StartGate] = {}
        self._drop_logged = False
        self._gave_up_logged: set[str] = set()
        self.waiting_room = WaitingRoom(crawler)
        #: the crawl's shared politeness when workers share a Redis state
        self.shared = shared_store(crawler)
        crawler.signals.connect(self.crawl_delay_found, signals.crawl_delay_found)
        crawler.signals.connect(
            self.request_reached_downloader, scrapy_signals.request_reached_downloader
        )
        crawler.signals.connect(
            self.response_downloaded, scrapy_signals.response_downloaded
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def downloader(self) -> Downloader:
        assert self.crawler.engine is not None
        return self.crawler.engine.downloader

    # -- Crawl-delay ---------------------------------------------------------------
    def crawl_delay_found(self, origin: Origin, delay: float) -> None:
        if delay <= 0:
            self.delays.pop(origin, None)
            self.skipped_origins.discard(origin)
            return
        host = _origin_text(origin)
        if delay > self.max_crawl_delay:
            if self.over_max == "skip":
                self.skipped_origins.add(origin)
                logger.warning(
                    "%s asks for Crawl-delay %gs, more than the %gs cap: not "
                    "crawling it (reason: %s)",
                    host,
                    delay,
                    self.max_crawl_delay,
                    skips.CRAWL_DELAY,
                )
                return
            logger.warning(
                "%s asks for Crawl-delay %gs; crawling it at the %gs cap "
                "(WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX)",
                host,
                delay,
                self.max_crawl_delay,
            )
            self._inc(STATS_CRAWL_DELAY_CAPPED)
            delay = self.max_crawl_delay
        self._inc(STATS_CRAWL_DELAY)
        self.delays[origin] = max(delay, self.download_delay)

    async def process_request(self, request: Request) -> None:
        if self.skipped_origins and _origin(request) in self.skipped_origins:
            skips.skip_request(self.crawler, request, skips.CRAWL_DELAY)
            raise IgnoreRequest(f"Crawl-delay over the cap: {request.url}")
        if self.shared is not None:
            await self._shared_turn(request)
            return
        if not self.delays and not self.paused:
            return
        key = self.downloader.get_slot_key(request)
        delay = self.delays.get(_origin(request), 0.0)
        if not delay and key not in self.paused:
            return
        # Requests wait their turn here, in the waiting room, rather than in
        # the downloader slot's queue: a queued request holds a place in
        # CONCURRENT_REQUESTS, so a host with a long Crawl-delay or pause
        # and many queued requests would stop every other host.
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = StartGate()
        now = monotonic()
        if not gate.queue and self._ready(key, gate) <= now:
            gate.next_start = now + delay
            return
        turn: Deferred[None] = Deferred()
        gate.queue.append((turn, delay))
        if gate.timer is None:
            self._schedule(key, gate)
        self._inc(STATS_WAITED)
        try:
            await self.waiting_room.wait(request, turn)
        except CrawlClosing:
            raise IgnoreRequest(f"crawl closing: {request.url}") from None

    async def _shared_turn(self, request: Request) -> None:
        # Every request of a shared crawl asks Redis for its start and a
        # place at its origin, for all workers together (see .shared).
        assert self.shared is not None
        origin = _origin(request)
        delay = self.delays.get(origin, self.download_delay)
        if self.shared.try_turn(request, origin, delay):
            return
        self._inc(STATS_WAITED)
        try:
            await self.waiting_room.wait(
                request, self.shared.turn(request, origin, delay)
            )
        except CrawlClosing:
            raise IgnoreRequest(f"crawl closing: {request.url}") from None

    def _ready(self, key: str, gate: StartGate) -> float:
        return max(gate.next_start, self.paused.get(key, 0.0))

    def _schedule(self, key: str, gate: StartGate) -> None:
        if gate.timer is not None:
            gate.timer.cancel()
        # Wake up at least every few seconds to notice the crawl closing.
        wait = min(CLOSE_CHECK, max(0.0, self._ready(key, gate) - monotonic()))
        gate.timer = call_later(wait, self._release, key, gate)

    def _release(self, key: str, gate: StartGate) -> None:
        """Let the next waiting request of a slot go, when its turn has come."""
        gate.timer = None
        if engine_closing(self.crawler.engine):
            self._drop(gate)
            return
        now = monotonic()
        if self._ready(key, gate) > now:  # not yet, or a pause began meanwhile
            self._schedule(key, gate)
            return
        if gate.queue:
            turn, delay = gate.queue.popleft()
            gate.next_start = now + delay
            turn.callback(None)
        if gate.queue:
            self._schedule(key, gate)

    def _drop(self, gate: StartGate) -> None:
        # A closing crawl waits for every request in progress; these would
        # go out one Crawl-delay apart (up to WEBSPIDER_MAX_WAITING_REQUESTS
        # of them), or after a pause of up to ten minutes. Like the
        # scheduler's queue they have not started: drop them.
        waiting, gate.queue = gate.queue, deque()
        if waiting and self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_DROPPED_AT_CLOSE, len(waiting))
        if waiting and not self._drop_logged:
            self._drop_logged = True
            logger.info(
                "Crawl closing: requests waiting for a Crawl-delay turn or a "
                "Retry-After pause are dropped (stat %s)",
                STATS_DROPPED_AT_CLOSE,
            )
        for turn, _delay in waiting:
            turn.errback(CrawlClosing())

    def request_reached_downloader(self, request: Request) -> None:
        # Sent after the downloader picked the slot and before it queues the
        # request, so the slot is set up before it decides when to start it.
        if not self.delays and not self.paused and not self.shared:
            return
        key = request.meta.get("download_slot")
        slot = self.downloader.slots.get(key) if isinstance(key, str) else None
        if slot is None or key is None:
            return
        if self.shared is not None:
            # The start was reserved for all workers: a delay of the slot's
            # own would only move it onto another worker's start.
            slot.delay, slot.jitter = 0.0, 0.0
        else:
            self._enforce_delay(request, slot)
        if key in self.paused:
            self._hold(key, slot)

    def _enforce_delay(self, request: Request, slot: Slot) -> None:
        delay = self.delays.get(_origin(request))
        if delay is not None and (slot.delay < delay or slot.jitter):
            key = request.meta["download_slot"]
            if self._delayed_slots.get(key) is not slot:
                # The first request after robots.txt: the delay counts from
                # its answer, when it became known, not from robots.txt's own
                # start, which a new connection's set-up may have held back.
                self._delayed_slots[key] = slot
                start_slot_delay_now(slot)
            # Jitter would start some requests sooner than the Crawl-delay.
            slot.delay, slot.jitter = max(slot.delay, delay), 0.0

    # -- Retry-After ---------------------------------------------------------------
    def response_downloaded(self, response: Response, request: Request) -> None:
        # Sent before the downloader frees the transfer slot and starts the
        # next queued request; process_response would be too late (with
        # CONCURRENT_REQUESTS_PER_DOMAIN=1 the next request would already be
        # on its way).
        if self.delays and self.shared is None:
            # AutoThrottle (an extension, so its handler ran first) may just
            # have lowered the slot's delay below the Crawl-delay.
            key = request.meta.get("download_slot")
            slot = self.downloader.slots.get(key) if isinstance(key, str) else None
            if slot is not None:
                self._enforce_delay(request, slot)
        if response.status in BACKPRESSURE_STATUSES:
            seconds = self.retry_after(response)
            if seconds is not None:
                self.pause(request, min(seconds, self.max_pause))
        if self.shared is not None:
            # after the pause is recorded: no other worker's request takes
            # the place before it sees the pause
            self.shared.done(request)

    def retry_after(self, response: Response) -> float | None:
        """Seconds the server asks us to wait, or None."""
        return retry_after_seconds(response.headers.get(b"Retry-After"), time())

    def process_exception(self, request: Request, exception: Exception) -> None:
        if self.shared is not None:
            self.shared.done(request)  # a place held by a failed download

    def process_response(
        self, request: Request, response: Response
    ) -> Response | Request:
        if self.shared is not None:
            self.shared.done(request)  # (already, unless a later one answered)
        if response.status not in BACKPRESSURE_STATUSES:
            return response
        if request.meta.get(META_ROBOTSTXT):
            return response  # the robots.txt middleware has its own retries
        if self.retry_after(response) is None:
            return response  # Scrapy's RetryMiddleware decides
        retries = int(request.meta.get(META_RETRY_AFTER_TIMES, 0))
        if retries >= self.retry_times:
            # Passed on as the failure it is; Scrapy's RetryMiddleware would
            # otherwise retry it at once, ignoring the Retry-After.
            request.meta["dont_retry"] = True
            self._inc(STATS_GAVE_UP)
            host = urlparse_cached(request).netloc
            if host not in self._gave_up_logged:
                self._gave_up_logged.add(host)
                logger.warning(
                    "Gave up on %s after %d Retry-After retries (HTTP %d); "
                    "further ones of host %s are only counted",
                    request.url,
                    retries,
                    response.status,
                    host,
                )
            return response
        retry = request.replace(dont_filter=True)
        retry.meta[META_RETRY_AFTER_TIMES] = retries + 1
        self._inc(STATS_RETRIED)
        return retry

    def pause(self, request: Request, seconds: float) -> None:
        """Start no request to ``request``'s downloader slot for ``seconds``."""
        key = request.meta.get("download_slot")
        if not isinstance(key, str):
            key = self.downloader.get_slot_key(request)
        if self.shared is not None:
            self.shared.pause(_origin(request), seconds)
        until = monotonic() + seconds
        if until <= self.paused.get(key, 0.0):
            return
        self.paused[key] = until
        self._inc(STATS_PAUSED)
        if self.crawler.stats is not None:
            self.crawler.stats.max_value(STATS_MAX_PAUSE, round(seconds))
        slot = self.downloader.slots.get(key)
        if slot is not None:
            self._hold(key, slot)

    def _hold(self, key: str, slot: Slot) -> None:
        remaining = self.paused[key] - monotonic()
        if remaining <= 0:
            del self.paused[key]
            return
        hold = self._holds.get(key)
        timer = slot_latercall(slot)
        if hold is not None and timer is hold:
            hold.cancel()
        elif timer is not None:
            # Scrapy's own DOWNLOAD_DELAY timer: replaced by the longer hold;
            # _resume lets the downloader recompute the delay afterwards.
            timer.cancel()
        hold = self._holds[key] = call_later(remaining, self._resume, key, slot)
        set_slot_latercall(slot, hold)

    def _resume(self, key: str, slot: Slot) -> None:
        if slot_latercall(slot) is self._holds.pop(key, None):
            set_slot_latercall(slot, None)
        if key in self.paused and self.paused[key] > monotonic():
            self._hold(key, slot)
            return
        self.paused.pop(key, None)
        # The downloader only looks at a slot's queue when something happens
        # to it; after a pause nothing does, so kick it (Scrapy's own
        # DOWNLOAD_DELAY timer does exactly this).
        process_slot_queue(self.downloader, slot)

    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)


def _origin(request: Request) -> Origin:
    return origin_of_parts(urlparse_cached(request))


def _origin_text(origin: Origin) -> str:
    scheme, host, port = origin
    return f"{scheme}://{host}:{port}"
