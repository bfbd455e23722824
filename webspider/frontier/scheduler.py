"""Scheduler: strict breadth-first levels, and rounds fed from the deferred frontier.

Scrapy's scheduler with two additions (SCHEDULER = this class):

Level barrier. With DEPTH_PRIORITY ordering alone, concurrency still lets a
depth-2 page be parsed while a slow depth-1 page is in flight; a link the
slow page holds at depth 2 is then first found, at depth 3, on the fast
path — recorded at the wrong depth, or deferred although it is within the
cap. So a request of depth d leaves the queue only when no request of a
smaller depth is queued (the queue is ordered by depth, see
webspider.frontier.queues) or still in progress (downloading, or its page
still being parsed), and, for d > 0, when all of the round's start requests
have been queued. The cost: at each level boundary the crawl waits for the
level's slowest page. ``WEBSPIDER_DEPTH_STRICT = False`` lifts the barrier
(depths are then "breadth-first as far as concurrency allows").

Rounds. With a depth cap, links beyond it are deferred
(webspider.frontier.depth calls ``defer``) into a
DeferredFrontier: a SQLite file under JOBDIR (next to the request queue and
the seen-set, so a paused job resumes with all three), or a temporary file
deleted at the end. When a round is over, webspider.frontier.rounds calls
``start_round``; its seeds are then taken from the frontier a batch at a
time, whenever no depth-0 request is queued, rather than all at once, so the
frontier stays on disk however large it is. A seed whose URL has meanwhile
been fetched is skipped. When the crawl ends (not when a job pauses) with
URLs still deferred, they are written to ``<output>/deferred.jsonl``.

Settings: WEBSPIDER_DEPTH_STRICT, WEBSPIDER_DEPTH_MAX, WEBSPIDER_DEPTH_DEFER,
JOBDIR, CONCURRENT_REQUESTS (the seed batch). Stats: see STATS_* below.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.core.scheduler import Scheduler
from scrapy.utils.job import job_dir
from scrapy.utils.misc import load_object

from webspider.config import ConfigError, get_output_dir
from webspider.frontier.deferred import DeferredFrontier, DeferredURL
from webspider.frontier.dupefilter import dupefilter_urls
from webspider.frontier.options import DepthOptions
from webspider.frontier.queues import DepthPriorityQueue, key_depth
from webspider.frontier.seen import MemorySeenSet
from webspider.internals import requests_in_progress
from webspider.keys import (
    DEFERRED_FILE,
    FRONTIER_FILE,
    META_LINK_KIND,
    META_REFERER,
    META_ROUND,
    STATS_DEFERRED_LEFT,
)
from webspider.requests import page_request, page_spider
from webspider.utils.atomic import open_atomic
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.internet.defer import Deferred

    from webspider.frontier.seen import SeenKeys

logger = logging.getLogger(__name__)


STATS_SEED_SEEN = "webspider/depth/seed_already_fetched_count"
STATS_BARRIER_WAIT = "webspider/depth/level_wait_count"


def round_scheduler(crawler: Crawler) -> RoundScheduler | None:
    """The crawl's RoundScheduler (None before the engine opens, or when
    SCHEDULER is another class)."""
    engine = crawler.engine
    scheduler = engine.scheduler if engine is not None else None
    return scheduler if isinstance(scheduler, RoundScheduler) else None


class RoundScheduler(Scheduler):
    """SCHEDULER for webspider (see module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        assert self.crawler is not None
        settings = self.crawler.settings
        options = DepthOptions.of(settings)
        self.strict = options.strict
        self.deferring = options.max_depth is not None and options.defer
        self.jobdir = job_dir(settings)
        self.output = get_output_dir(settings)
        #: the round being crawled (0 for the first)
        self.round = 0
        self.frontier: DeferredFrontier | None = None
        self._seed_batch = max(settings.getint("CONCURRENT_REQUESTS"), 1)
        #: this round's seeds are still (partly) in the frontier
        self._seeding = False
        #: spider.start() is still being consumed (told by the depth middleware)
        self.start_pending = False
        #: the memory and (with JOBDIR) disk queues, set by open()
        self._pqs: list[DepthPriorityQueue] = []

    # -- lifecycle --------------------------------------------------------------
    def open(self, spider: Spider) -> Deferred[None] | None:
        result = super().open(spider)
        # checked once here rather than on every next_request
        self._pqs = self._check_queues()
        if self.deferring:
            if self.jobdir:
                self.frontier = DeferredFrontier(Path(self.jobdir) / FRONTIER_FILE)
            else:
                self.frontier = DeferredFrontier.temporary()
            self.round = self.frontier.get_state("round", 0)
            self._seeding = self.round > 0 and self.frontier.waiting_before(self.round)
            if self.round or len(self.frontier):
                logger.info(
                    "Resuming round %d with %d URLs deferred",
                    self.round,
                    len(self.frontier),
                )
        return result

    def close(self, reason: str) -> Deferred[None] | None:
        if self.frontier is not None:
            left = self.deferred_left()
            assert self.stats is not None
            self.stats.set_value(STATS_DEFERRED_LEFT, left)
            # A JOBDIR job stopped by Ctrl-C is paused, not over: the frontier
            # waits in JOBDIR for the same command to resume it.
            paused = bool(self.jobdir) and reason == "shutdown"
            if not paused:
                path = self.output / DEFERRED_FILE
                if left:
                    self.write_deferred(path)
                else:  # not a leftover of an earlier crawl into this output
                    path.unlink(missing_ok=True)
            self.frontier.set_state("round", self.round)
            self.frontier.close()
        return super().close(reason)

    # -- the queue ----------------------------------------------------------------
    def has_pending_requests(self) -> bool:
        # Seeds still in the frontier are pending: the round is not over.
        return self._seeding or super().has_pending_requests()

    def next_request(self) -> Request | None:
        # Called for every request (and again while the barrier holds): the
        # head of the queues is looked up once, again only if seeds were fed.
        head = self._head()
        if self._seeding and (head is None or key_depth(head[0]) != 0):
            self._feed_seeds()
            head = self._head()
        if head is None:
            return None
        key, queue = head
        if self.strict and not self.level_open(key_depth(key)):
            assert self.stats is not None
            self.stats.inc_value(STATS_BARRIER_WAIT)
            return None
        request = queue.pop()
        assert self.stats is not None and request is not None
        where = "memory" if queue is self.mqs else "disk"
        self.stats.inc_value(f"scheduler/dequeued/{where}")
        self.stats.inc_value("scheduler/dequeued")
        return request

    def level_open(self, depth: int) -> bool:
        """Whether requests of ``depth`` may leave the queue now (the level
        barrier, see module docstring)."""
        if depth == 0:
            return True
        if self._seeding or self.start_pending:
            return False
        return not any(d < depth for d in self._depths_in_progress())

    def _depths_in_progress(self) -> Iterable[int]:
        # Scrapy has no public view of "requests whose callback output is not
        # processed yet"; the engine keeps exactly that set (from download
        # start until every request the page yields is scheduled), a private
        # one checked at start-up (webspider.internals).
        engine = self.crawler.engine if self.crawler else None
        for request in requests_in_progress(engine):
            depth = request.meta.get("depth")
            if depth is not None:  # robots.txt and such carry none
                yield depth

    def _check_queues(self) -> list[DepthPriorityQueue]:
        queues = [self.mqs, self.dqs] if self.dqs is not None else [self.mqs]
        for queue in queues:
            if not isinstance(queue, DepthPriorityQueue):
                raise TypeError(
                    "SCHEDULER_PRIORITY_QUEUE must be "
                    "webspider.frontier.queues.DepthPriorityQueue (or a subclass)"
                )
        return queues  # type: ignore[return-value]

    def _head(self) -> tuple[int, DepthPriorityQueue] | None:
        """The queue key of the next request and the queue holding it."""
        best: tuple[int, DepthPriorityQueue] | None = None
        for queue in self._pqs:
            key = queue.head_key()
            if key is not None and (best is None or key < best[0]):
                best = (key, queue)
        return best

    # -- deferral and rounds ------------------------------------------------------
    def defer(self, request: Request) -> bool:
        """Put ``request`` in the frontier; False when its URL already waits there."""
        assert self.frontier is not None
        meta = request.meta
        referer = meta.get(META_REFERER)
        return self.frontier.add(
            DeferredURL(
                key=canonical_url(request.url),
                url=request.url,
                depth=meta.get("depth", 0),
                referer=referer if isinstance(referer, str) else None,
                round=meta.get(META_ROUND, self.round),
                kind=meta.get(META_LINK_KIND, "page"),
            )
        )

    def is_seed(self, request: Request) -> bool:
        """Whether ``request``'s URL is a seed of this round not queued yet:
        it starts the round at depth 0, so a link to it found meanwhile on
        another seed is not followed (it would get depth 1)."""
        if not self._seeding or self.frontier is None:
            return False
        round_ = self.frontier.round_of(canonical_url(request.url))
        return round_ is not None and round_ < self.round

    def start_round(self) -> bool:
        """Begin the next round from the deferred frontier. False (and no new
        round) when no deferred URL is left to fetch."""
        if self.frontier is None or not self.frontier.waiting_before(self.round + 1):
            return False
        self.round += 1
        self._seeding = True
        if not self._feed_seeds():
            self.round -= 1  # every waiting URL had been fetched meanwhile
            return False
        self.frontier.set_state("round", self.round)
        self.frontier.commit()
        return True

    def _feed_seeds(self) -> int:
        """Schedule the next batch of this round's seeds (at least one, unless
        none is left); returns how many."""
        assert self.frontier is not None and self.crawler is not None
        engine = self.crawler.engine
        seen = self._seen_urls()
        fed = 0
        while not fed:
            batch = self.frontier.take(self.round, self._seed_batch)
            if not batch:
                self._seeding = False
                break
            for entry in batch:
                if entry.key in seen:
                    assert self.stats is not None
                    self.stats.inc_value(STATS_SEED_SEEN)
                    continue
                engine.crawl(self.seed_request(entry))
                fed += 1
        return fed

    def seed_request(self, entry: DeferredURL) -> Request:
        """The request that starts round ``self.round`` from a deferred URL."""
        return page_request(
            page_spider(self.crawler) if self.crawler else None,
            entry.url,
            depth=0,
            round=self.round,
            referer=entry.referer,
            kind=entry.kind,
        )

    def _seen_urls(self) -> SeenKeys:
        # none are known with another DUPEFILTER_CLASS: every seed is fed
        seen = dupefilter_urls(self.df)
        return seen if seen is not None else MemorySeenSet()

    def deferred_left(self) -> int:
        """Deferred URLs not fetched (a waiting URL may have been fetched
        meanwhile through another link; it is not counted)."""
        if self.frontier is None:
            return 0
        seen = self._seen_urls()
        return sum(1 for entry in self.frontier if entry.key not in seen)

    def write_deferred(self, path: Path) -> int:
        """Write the deferred URLs not fetched as JSON lines (url, depth,
        referer, round) — a URL list for ``-a start_urls=@<path>``."""
        assert self.frontier is not None
        seen = self._seen_urls()
        written = 0
        # streamed (the frontier can hold millions), and never left half-written
        with open_atomic(path) as fh:
            for entry in self.frontier:
                if entry.key in seen:
                    continue
                record = {
                    "url": entry.url,
                    "depth": entry.depth,
                    "referer": entry.referer,
                    "round": entry.round,
                }
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                written += 1
        logger.info("%d deferred URLs not crawled, written to %s", written, path)
        return written


def check_scheduler(settings: BaseSettings) -> None:
    """Deferring over-depth links to later rounds needs this scheduler."""
    options = DepthOptions.of(settings)
    if options.max_depth is None or not options.defer:
        return
    scheduler = load_object(settings["SCHEDULER"])
    # (issubclass would not do: Scrapy's scheduler metaclass duck-types it)
    if RoundScheduler not in getattr(scheduler, "__mro__", ()):
        raise ConfigError(
            "max_depth defers links to later rounds, which needs SCHEDULER = "
            "webspider.frontier.scheduler.RoundScheduler (or -a defer=0)"
        )
