"""Scheduler: the crawl state's queue, breadth-first per origin, in rounds.

A Scrapy ``BaseScheduler`` (SCHEDULER = this class) over a CrawlState
(webspider.frontier.state; the embedded SQLiteState): the queue, the
seen-set, the deferred frontier and the round all live there, as data.

Leases. ``next_request`` leases a request from the state and hands it to
the engine. The engine keeps a request "in progress" from download start
until everything its page yields is scheduled and its item processed (a
private set, read through webspider.internals); once a handed-out request
has left it, its lease is acknowledged: the page is done. A redirect is
done when its target is queued; a retry (``dont_filter``) inherits the lease
of the request it retries and is kept in memory until it is done. Acks,
new requests and output offsets are committed together about once a second
(SQLiteState.maybe_commit), so after a crash the requests of uncommitted
acks are fetched again — only those in flight at the kill. When the crawl
closes, leases not done are released.

Level barrier, per origin. With DEPTH_PRIORITY ordering alone, concurrency
lets a depth-2 page be parsed while a slow depth-1 page is in flight; a link
the slow page holds at depth 2 is then first found, at depth 3, on the fast
path — recorded at the wrong depth, or deferred although within the cap. So
a request of depth d of an origin is leased only when no request of a
smaller depth of that origin is queued or leased (the state orders each
origin's queue by depth), and, for d > 0, when all start requests are
queued. An origin only waits for itself: a slow or paused origin delays its
own next level, not other origins'. ``WEBSPIDER_DEPTH_STRICT = False`` lifts
the barrier.

Rounds. With a depth cap, links beyond it are deferred (webspider.frontier.
depth calls ``defer``). When a round is over, webspider.frontier.rounds calls
``start_round``: the state queues every URL deferred before it at depth 0,
in one transaction with the round number (a URL deferred and then fetched
within the cap meanwhile is no longer deferred: it is not fetched again).
The URLs still deferred when the crawl ends or pauses are recorded as
skipped and, unless paused, written to ``<output>/deferred.jsonl``
(webspider.frontier.deferredleft).

Requests that cannot be stored as data (webspider.frontier.requestdata: a
custom callback, a body, meta JSON cannot write) are kept in memory, served
before the state's queue, and counted in ``webspider/scheduler/memory_count``;
they do not survive a crash.

The state is ``<output>/.webspider-state.sqlite3``, or
``<JOBDIR>/webspider-state.sqlite3`` with JOBDIR; the same command continues
an interrupted crawl from it (webspider.frontier.resume).

Shared state (``WEBSPIDER_STATE``, a Redis URL: many workers, one crawl).
Leases then last ``WEBSPIDER_STATE_LEASE_TIMEOUT`` seconds, renewed by a
timer (webspider.frontier.sharedtimers). Acks are sent with the
commit, after pages.jsonl's lines are on disk and its length recorded: a
worker killed in between fetches those pages again (another worker does),
rather than losing their lines. A worker with nothing to lease while other
workers hold leases waits (``has_pending_requests``): those may come back or
bring new links; the crawl ends when nothing is queued or leased anywhere.
The scheduler of an idle worker (no request out) wakes the engine itself,
which does not see what ends the wait (sharedtimers), and a worker whose
pages are all done first sends its own acks, which may be what holds the
level.
A worker holds at most two requests of an origin with a delay between
starts (webspider.frontier.holding), so the others share its turns.

``pages.jsonl`` is written here too, a page's line when its lease is
acknowledged, with its length committed with the acks
(webspider.frontier.pages).

Settings: WEBSPIDER_DEPTH_STRICT, WEBSPIDER_DEPTH_MAX, WEBSPIDER_DEPTH_DEFER,
JOBDIR. Stats: see STATS_* below, and Scrapy's ``scheduler/*``.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import deferred_from_coro

from webspider.config import get_output_dir
from webspider.frontier.deferredleft import end_frontier
from webspider.frontier.dupefilter import request_key
from webspider.frontier.holding import OriginHolds
from webspider.frontier.options import DepthOptions, StateOptions
from webspider.frontier.pages import META_PAGES_TAIL, PagesFile
from webspider.frontier.requestdata import from_stored, to_stored
from webspider.frontier.resume import mark_damaged, open_crawl_state, state_path
from webspider.frontier.sharedtimers import WAKE_FIRST, EngineWaker, LeaseHeartbeat
from webspider.frontier.state import META_FINISHED, StoredRequest
from webspider.internals import requests_in_progress
from webspider.keys import (
    DEFERRED_FILE,
    PAGES_FILE,
    STATS_STATE_RESUMED,
    STATS_URLS_SEEN,
)
from webspider.signals import (
    crawl_delay_found,
    crawl_state_closing,
    crawl_state_committing,
    crawl_state_finishing,
    crawl_state_opened,
    listened,
    requests_acknowledged,
)
from webspider.storage import (
    crawl_closed,
    crawl_stop,
    failed_write,
    state_opened,
    stop_crawl,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.defer import Deferred
    from typing_extensions import Self

    from webspider.frontier.redisstate import RedisState
    from webspider.frontier.sqlite import SQLiteState
    from webspider.frontier.state import Lease
    from webspider.utils.url import Origin

logger = logging.getLogger(__name__)


def _on_event_loop() -> bool:
    """Whether this runs on a running asyncio event loop (a crawl on
    Scrapy's asyncio reactor), where a coroutine can be awaited."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


#: new requests of a shared state sent in one round trip at most
ADD_BATCH = 1000
STATS_SEED_SEEN = "webspider/depth/seed_already_fetched_count"
STATS_BARRIER_WAIT = "webspider/depth/level_wait_count"
STATS_FILTERED = "webspider/scheduler/duplicate_count"
STATS_MEMORY = "webspider/scheduler/memory_count"
STATS_RELEASED = "webspider/scheduler/released_count"
#: leases of a delayed origin put back at once: this worker held enough
STATS_PUT_BACK = "webspider/scheduler/put_back_count"

#: the state's meta holding STATS_URLS_SEEN as of the last commit
META_URLS_SEEN = "urls_seen"

#: a lease's deadline; the embedded state keeps leases until its holder dies,
#: the deadline matters to a shared (distributed) state
LEASE_SECONDS = 3600.0


class StateScheduler(BaseScheduler):
    """SCHEDULER for webspider (see module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = DepthOptions.of(settings)
        self.strict = options.strict
        self.deferring = options.max_depth is not None and options.defer
        self.output = get_output_dir(settings)
        self.state: SQLiteState | RedisState | None = None
        #: the state is shared with other workers (Redis)
        self.shared = False
        self.lease_seconds = LEASE_SECONDS
        self._shared_lease_seconds = StateOptions.of(settings).lease_timeout
        #: a shared state's acks kept here are sent (committed) once there
        #: are this many (WEBSPIDER_STATE_COMMIT_PAGES; 0: by time alone), as
        #: the embedded state commits its own
        self._commit_pages = StateOptions.of(settings).commit_pages
        #: acknowledged here, sent to a shared state with the next commit
        self._to_ack: list[int] = []
        #: renews this worker's leases of a shared state (sharedtimers.py)
        self._heartbeat: LeaseHeartbeat | None = None
        #: a shared state's new requests, sent together (see enqueue_request)
        self._adds: list[tuple[Request, StoredRequest]] = []
        self._flush_soon: Callable[[], Any] | None = None
        #: spider.start() is still being consumed (told by the depth middleware)
        self.start_pending = False
        #: requests kept in memory, each with the lease it holds (a retry's)
        self._memory: deque[tuple[Request, int | None]] = deque()
        self._memory_seen: set[str] = set()
        #: requests handed to the engine → their lease
        self._out: dict[Request, int] = {}
        #: key → (lease, request) of the requests handed out
        self._out_keys: dict[str, tuple[int, Request]] = {}
        #: leased, not handed out yet
        self._leased: deque[Lease] = deque()
        self._batch = max(1, min(settings.getint("CONCURRENT_REQUESTS"), 32))
        #: a shared state's worker asks again this soon when it got nothing
        self._waker = EngineWaker(crawler)
        #: requests of delayed origins held (a shared state's workers only)
        self.holds = OriginHolds(settings.getfloat("DOWNLOAD_DELAY"))
        self.filtered = 0
        #: pages.jsonl, unless Scrapy's feed exporter writes the items (FEEDS)
        self.write_pages = not settings.getdict("FEEDS")
        self.pages: PagesFile | None = None
        #: lease → the pages.jsonl lines of its page, written when it is done
        self._lines: dict[int, list[bytes]] = {}
        #: the crawl state could not be opened: a write the disk refused
        self._open_failure: BaseException | None = None
        if self.write_pages:
            crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def stats(self) -> StatsCollector:
        assert self.crawler.stats is not None
        return self.crawler.stats

    # -- lifecycle --------------------------------------------------------------
    def open(self, spider: Spider) -> None:
        self.crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        try:
            self.state, resumed = open_crawl_state(self.crawler.settings)
        except (OSError, sqlite3.Error) as exc:
            if not failed_write(exc):
                raise
            # a full disk before the first page: the crawl is stopped once
            # the engine is open (closing it while it opens fails in Scrapy)
            self._open_failure = exc
            self.crawler.signals.connect(self._not_opened, signal=signals.spider_opened)
            return
        state = self.state
        self.shared = getattr(state, "shared", False)
        # the state an error of the crawl's SQLite, or a damaged state, is about
        state_opened(self.crawler, getattr(state, "path", None) or state.where)  # type: ignore[union-attr]
        if self.shared:
            self.lease_seconds = self._shared_lease_seconds
            self._heartbeat = LeaseHeartbeat(state, self.lease_seconds)  # type: ignore[arg-type]
            self._flush_soon = lambda: call_later(0, self._flush_adds)
            self.crawler.signals.connect(self.crawl_delay_found, crawl_delay_found)
        self.stats.set_value(STATS_STATE_RESUMED, int(resumed))
        if self.write_pages:
            self.pages = PagesFile(
                self.output / PAGES_FILE,
                state.get_offset(PAGES_FILE),
                self.crawler.settings.get("FEED_EXPORT_ENCODING") or "utf-8",
            )
        if hasattr(spider, "seen_urls"):
            spider.seen_urls = state
        self.crawler.signals.send_catch_log(signal=crawl_state_opened, records=state)
        counts = state.counts()
        # queued by the earlier part of a resumed crawl: the count committed
        # with the requests it counts (a shared state's workers each keep
        # their own, so there it is the state's size, HEAD checks included)
        seen = None if self.shared else state.get_meta(META_URLS_SEEN)
        self.stats.set_value(
            STATS_URLS_SEEN, int(seen) if seen is not None else len(state)
        )
        if counts.queued or counts.done or counts.deferred:
            logger.info(
                "Resuming round %d with %d URLs deferred, %d queued (%d of them "
                "were in flight), %d done",
                state.round,
                counts.deferred,
                counts.queued,
                state.released_on_open,
                counts.done,
            )

    def _spider_closed(self) -> None:
        crawl_closed(self.crawler)

    def _not_opened(self) -> None:
        exc = self._open_failure
        assert exc is not None
        where = state_path(self.crawler.settings)
        stop_crawl(self.crawler, exc, where if isinstance(exc, sqlite3.Error) else None)

    def close(self, reason: str) -> Deferred[None] | None:
        state = self.state
        if state is None:
            return None
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        self._waker.cancel()
        if self.stopped:
            # a write the disk refused or a damaged state stopped the crawl:
            # the features do not finish (their end writes too), the state
            # stays as a kill leaves it
            self._abandon()
            return None
        try:
            self._flush_adds()
        except Exception as exc:
            if not self._stop(exc):
                raise
            self._abandon()
            return None
        if listened(self.crawler, crawl_state_finishing) and _on_event_loop():
            # the engine waits for it: a feature's end may wait for another
            # process (the mirror's fix-up for the page worker)
            return deferred_from_coro(self._finish_then_close(reason))
        self._close(reason)
        return None

    async def _finish_then_close(self, reason: str) -> None:
        await self.crawler.signals.send_catch_log_async(
            signal=crawl_state_finishing,
            reason=reason,
            records=self.state,
            commit=self._commit,
        )
        self._close(reason)

    def _close(self, reason: str) -> None:
        try:
            self._close_state(reason)
        except Exception as exc:
            if not self._stop(exc):
                raise
        if self.stopped:
            self._abandon()

    def _close_state(self, reason: str) -> None:
        state = self.state
        assert state is not None
        if self.stopped:
            return
        # the requests done are acknowledged before the features finish:
        # what they keep until an acknowledgement is in their last figures
        self._acknowledge()
        if self.deferring:
            # before the features finish too: the reports' last figures
            # count what is left deferred as skipped
            end_frontier(
                self.crawler,
                state,
                self.output / DEFERRED_FILE,
                reason,
                self.deferred_left(),
            )
            if self.stopped:  # deferred.jsonl could not be written
                return
        # the features finish what they keep in the state while it is open;
        # a long piece of work commits as it goes (with pages.jsonl's
        # length, like any commit), so that a kill during it loses little
        self.crawler.signals.send_catch_log(
            signal=crawl_state_closing,
            reason=reason,
            records=state,
            commit=self._commit,
        )
        if self.stopped:  # one of their writes failed: nothing more
            return
        self._release_all()
        self.stats.set_value(STATS_FILTERED, self.filtered)
        if reason == "finished":
            # the next run of the same command is a new (update) crawl
            state.set_meta(META_FINISHED, "1")
        self._commit()
        if self.stopped:
            return
        if self.pages is not None:
            self.pages.close()
            self.pages = None
        state.close()
        self.state = None

    # -- the crawl cannot go on (webspider.storage) --------------------------------
    @property
    def stopped(self) -> bool:
        """Whether a write the disk refused or a damaged state stopped the
        crawl: nothing is written or committed from then on."""
        return crawl_stop(self.crawler) is not None

    def _stop(self, exc: BaseException) -> bool:
        """``stop_crawl`` for ``exc`` (the state's file named for an SQLite
        error); False when ``exc`` is neither such a write nor a damaged
        state."""
        path = getattr(self.state, "path", None)
        return stop_crawl(
            self.crawler, exc, path if isinstance(exc, sqlite3.Error) else None
        )

    def _abandon(self) -> None:
        """Close the state and pages.jsonl without committing or writing
        anything more: as a kill leaves them, which the same command
        continues (pages.jsonl is cut back to its committed length then)."""
        self.stats.set_value(STATS_FILTERED, self.filtered)
        if self.pages is not None:
            self.pages.abandon()
            self.pages = None
        state, self.state = self.state, None
        if state is None:
            return
        # a damaged state's next run is refused before it starts, not halfway
        stop = crawl_stop(self.crawler)
        damaged = stop.error if stop is not None and stop.damaged else None
        if damaged is not None and self.shared:
            state.mark_damaged(damaged)  # type: ignore[union-attr]
        state.abandon()
        if damaged is not None and not self.shared:
            mark_damaged(self.crawler.settings, damaged)

    # -- the queue ----------------------------------------------------------------
    def __len__(self) -> int:
        if self._adds:
            self._flush_adds()
        state = self.state
        queued = state.queued if state else 0
        return len(self._memory) + len(self._leased) + queued

    def has_pending_requests(self) -> bool:
        if self.stopped:
            # the stop closes the engine with its own reason
            # (webspider.storage): idle, it would be closed as finished too,
            # by a task that fails once the first close is done
            return True
        try:
            return self._has_pending_requests()
        except Exception as exc:
            if not self._stop(exc):
                raise
            return True  # the engine closes the crawl, not as finished

    def _has_pending_requests(self) -> bool:
        if len(self) > 0:
            return True
        if not self.shared:
            return False
        state = self.state
        assert state is not None
        # idle here: send the acks now, then ask whether any worker is busy
        self._acknowledge()
        if self._to_ack:
            self._commit()
        return bool(state.pending())  # type: ignore[union-attr]

    def crawl_delay_found(self, origin: Origin, delay: float) -> None:
        self.holds.crawl_delay(origin, delay)

    def enqueue_request(self, request: Request) -> bool:
        if self.state is None:  # not opened (a full disk): the crawl stops
            return False
        try:
            return self._enqueue_request(request)
        except Exception as exc:
            if not self._stop(exc):
                raise
            return False

    def _enqueue_request(self, request: Request) -> bool:
        assert self.state is not None
        key = request_key(request)
        stored = to_stored(request, key, self.crawler.spider)
        if stored is not None and self._flush_soon is not None:
            # Shared state: one round trip for the links a page brings (the
            # spider has asked the seen-set about them in one call already).
            # They are sent at the end of this reactor turn, or before the
            # queue is read; one another worker added meanwhile is dropped
            # then, with the request_dropped signal the engine would send.
            if not self._adds:
                self._flush_soon()
            self._adds.append((request, stored))
            if len(self._adds) >= ADD_BATCH:
                self._flush_adds()
            return True
        if stored is not None:
            deferred = self.state.deferred if self.deferring else 0
            [new] = self.state.add([stored])
            if not new:
                self.filtered += 1
                return False
            if self.deferring and self.state.deferred < deferred:
                # found within the cap after it was deferred: not a seed later
                self.stats.inc_value(STATS_SEED_SEEN)
            self._enqueued(key, "disk")
            return True
        lease: int | None = None
        if request.dont_filter:
            # a retry: it holds the lease of the request it retries
            held = self._out_keys.pop(key, None)
            if held is not None:
                lease, retried = held
                self._out.pop(retried, None)
        else:
            self._flush_adds()  # a kept request of that key counts as seen
            if key in self._memory_seen or key in self.state:
                self.filtered += 1
                return False
            self._memory_seen.add(key)
        self._memory.append((request, lease))
        self.stats.inc_value(STATS_MEMORY)
        # a retry (it holds a lease) asks again for a URL already counted
        self._enqueued(key, "memory", new=lease is None)
        return True

    def _flush_adds(self) -> None:
        """Send the shared state the requests ``enqueue_request`` kept."""
        adds = self._adds
        state = self.state
        if not adds or state is None:
            return
        self._adds = []
        codes = state.add_codes([stored for _, stored in adds])  # type: ignore[union-attr]
        dropped = []
        for (request, stored), code in zip(adds, codes, strict=True):
            if not code:
                self.filtered += 1
                dropped.append(request)
                continue
            if code == 2 and self.deferring:
                self.stats.inc_value(STATS_SEED_SEEN)
            self._enqueued(stored.key, "disk")
        spider = self.crawler.spider
        for request in dropped:
            self.crawler.signals.send_catch_log(
                signal=signals.request_dropped, request=request, spider=spider
            )

    def _enqueued(self, key: str, where: str, new: bool = True) -> None:
        """Count a request queued; a ``new`` GET URL among the URLs seen (a
        retry is not new; a deferred URL is counted once queued: here, when
        a link within the cap finds it first, or when its round starts)."""
        stats = self.stats
        stats.inc_value("scheduler/enqueued")
        stats.inc_value(f"scheduler/enqueued/{where}")
        if new and " " not in key:  # GET: a URL (HEAD checks, others keyed apart)
            stats.inc_value(STATS_URLS_SEEN)

    def next_request(self) -> Request | None:
        if self.state is None or self.stopped:
            return None
        try:
            return self._next_request()
        except Exception as exc:
            if not self._stop(exc):
                raise
            return None

    def _next_request(self) -> Request | None:
        state = self.state
        assert state is not None
        if self._adds:
            self._flush_adds()
        self._acknowledge()
        pages = self._commit_pages
        if state.commit_due() or (pages and len(self._to_ack) >= pages):
            self._commit()
        if self._memory:
            request, lease = self._memory.popleft()
            if lease is not None:
                self._hand_out(request, lease)
            self._dequeued("memory")
            return request
        leased = self._leased
        if not leased:
            leased.extend(self._lease_batch())
            if not leased and self._to_ack and not self._out:
                # this worker's own pages, done but not acknowledged on the
                # shared state yet, may be what holds their origin's level
                # (while some of its requests are still out, the level is
                # held anyway, or it waits for a delay: the commit due
                # within a second sends them)
                self._commit()
                leased.extend(self._lease_batch())
            if not leased:
                if self.shared and not self._out:
                    # idle: nothing of its own will make the engine ask again
                    # (with requests out, it asks when one is done, and a
                    # poll would only hold the reactor up)
                    self._waker.later()
                if state.queued:
                    self.stats.inc_value(STATS_BARRIER_WAIT)
                return None
            self._waker.delay = WAKE_FIRST
        taken = leased.popleft()
        request = from_stored(taken.request, self.crawler.spider)
        self._hand_out(request, taken.ticket)
        self._dequeued("disk")
        return request

    def _lease_batch(self) -> list[Lease]:
        """Lease a batch at a time: one query for the engine's burst of calls."""
        state = self.state
        assert state is not None
        holds = self.holds if self.shared and self.holds.active else None
        got = state.lease(
            self._batch,
            deadline=time.time() + self.lease_seconds,
            strict=self.strict,
            max_depth=0 if self.start_pending else None,
            skip_origins=holds.full() if holds is not None else (),
        )
        if holds is not None:
            got, back = holds.admit(got)
            if back:
                state.release(back)
                self.stats.inc_value(STATS_PUT_BACK, len(back))
        return got

    def _dequeued(self, where: str) -> None:
        self.stats.inc_value("scheduler/dequeued")
        self.stats.inc_value(f"scheduler/dequeued/{where}")

    def _hand_out(self, request: Request, lease: int) -> None:
        self._out[request] = lease
        self._out_keys[request_key(request)] = (lease, request)

    def _acknowledge(self) -> None:
        """Acknowledge the leases of the requests that left the engine."""
        out = self._out
        if not out or self.stopped:
            return
        in_progress = requests_in_progress(self.crawler.engine)
        done = [request for request in out if request not in in_progress]
        if not done:
            return
        tickets = []
        for request in done:
            ticket = out.pop(request)
            tickets.append(ticket)
            key = request_key(request)
            held = self._out_keys.get(key)
            if held is not None and held[0] == ticket:
                del self._out_keys[key]
        assert self.state is not None
        if self.pages is not None and self._lines:
            for ticket in tickets:
                lines = self._lines.pop(ticket, None)
                if lines:
                    self.pages.write(lines)
        self.holds.done(tickets)
        if self.shared:
            self._to_ack += tickets  # sent after the lines are on disk
        else:
            self.state.ack(tickets)
        if listened(self.crawler, requests_acknowledged):
            self.crawler.signals.send_catch_log(
                signal=requests_acknowledged, tickets=tickets
            )

    def lease_ticket(self, request: Request | None) -> int | None:
        """The ticket of the lease ``request`` was handed out under (a retry
        goes on with its first request's), or None: a request kept in
        memory, or one whose lease is acknowledged already."""
        if request is None:
            return None
        ticket = self._out.get(request)
        if ticket is None:
            held = self._out_keys.get(request_key(request))
            ticket = held[0] if held is not None else None
        return ticket

    def item_scraped(self, item: Any, response: Response) -> None:
        """Hold a page's line until its lease is acknowledged (see
        webspider.frontier.pages); a page without a lease (kept in memory)
        is written at once."""
        pages = self.pages
        if pages is None or self.stopped:
            return
        line = pages.line(item)
        ticket = self.lease_ticket(response.request)
        if ticket is None:
            try:
                pages.write([line])
            except OSError as exc:
                if not self._stop(exc):
                    raise
        else:
            self._lines.setdefault(ticket, []).append(line)

    def _commit(self) -> None:
        """One transaction: the acks so far, pages.jsonl's length and what
        the features keep with them. Nothing once a write the disk refused
        stopped the crawl (webspider.storage), this commit's included: the
        state stays at the last commit whose writes all succeeded."""
        if self.stopped:
            return
        try:
            self._commit_now()
        except Exception as exc:
            if not self._stop(exc):
                raise

    def _commit_now(self) -> None:
        assert self.state is not None
        if self.pages is not None:
            # on disk while the features write their part (pages.py)
            self.pages.start_sync()
        self.crawler.signals.send_catch_log(
            signal=crawl_state_committing, records=self.state
        )
        if self.stopped:  # a feature's write failed (its signal handler)
            return
        if self.pages is not None:
            self.state.set_offset(PAGES_FILE, self.pages.sync())
            tail = self.pages.tail()
            if tail is not None and not self.shared:
                self.state.set_meta(META_PAGES_TAIL, tail)
        if not self.shared:
            seen = self.stats.get_value(STATS_URLS_SEEN, 0)
            self.state.set_meta(META_URLS_SEEN, str(seen))
        if self._to_ack:
            self.state.ack(self._to_ack)
            self._to_ack = []
        self.state.commit()

    def _release_all(self) -> None:
        assert self.state is not None
        self._acknowledge()
        tickets = list(self._out.values())
        tickets += [lease for _, lease in self._memory if lease is not None]
        tickets += [lease.ticket for lease in self._leased]
        if tickets:
            self.state.release(tickets)
            self.stats.inc_value(STATS_RELEASED, len(tickets))
        self._out.clear()
        self._out_keys.clear()
        self._memory.clear()
        self._leased.clear()
        self.holds.clear()

    # -- deferral and rounds ------------------------------------------------------
    @property
    def round(self) -> int:
        return self.state.round if self.state is not None else 0

    def defer(self, request: Request) -> bool:
        """Keep ``request`` for a later round; False when its URL is already
        deferred (or seen)."""
        assert self.state is not None
        stored = to_stored(request, request_key(request), self.crawler.spider)
        if stored is None:
            return False
        try:
            [new] = self.state.defer([stored])
        except Exception as exc:
            if not self._stop(exc):
                raise
            return False
        return new

    def start_round(self) -> bool:
        """Begin the next round from the deferred frontier. False (and no new
        round) when no deferred URL is left to fetch."""
        assert self.state is not None
        if self.stopped:
            return False
        try:
            self._acknowledge()
            self._commit()
            state = self.state
            if not self.shared:
                # the deferred URLs are scheduled now: counted among the URLs
                # seen in the round change's own commit
                seen = self.stats.get_value(STATS_URLS_SEEN, 0) + state.deferred
                state.set_meta(META_URLS_SEEN, str(seen))
            moved = state.next_round()
            if moved:
                self.stats.inc_value(STATS_URLS_SEEN, moved)
            return not self.stopped and moved > 0
        except Exception as exc:
            if not self._stop(exc):
                raise
            return False

    def deferred_count(self) -> int:
        return self.state.deferred if self.state is not None else 0

    def deferred_left(self) -> int:
        """Deferred URLs not fetched."""
        return self.deferred_count()
