"""Round control: when a round is over, start the next from the deferred frontier.

A round is over when Scrapy finds the spider idle: nothing queued, nothing
downloading, no page being parsed. Then, unless ``-a max_rounds=K`` rounds
after the first have run, the scheduler starts the next round; a round whose
every deferred URL was fetched meanwhile is not started, and the crawl ends.

An extension rather than part of the depth middleware: deciding when a round
ends and whether another starts is crawl-wide policy (``should_start_round``
is the method to override), while the middleware judges one link at a time.
The mechanism — the frontier, seeding, the level barrier — is the
scheduler's (webspider.frontier.scheduler).

Settings: WEBSPIDER_DEPTH_MAX (the extension is off without a cap),
WEBSPIDER_DEPTH_MAX_ROUNDS. Stats: ``webspider/depth/round_completed_count``
and, with the middleware's and scheduler's, one end-of-crawl log line.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, NotConfigured

from webspider.frontier.depth import (
    STATS_DEEPEST,
    STATS_DEFERRED,
    STATS_DROPPED,
    STATS_PAGES,
)
from webspider.frontier.options import DepthOptions
from webspider.frontier.scheduler import StateScheduler
from webspider.frontier.schedulerlookup import round_scheduler
from webspider.internals import wake_engine
from webspider.keys import STATS_DEFERRED_LEFT, STATS_ROUNDS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class RoundControl:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        options = DepthOptions.of(crawler.settings)
        if options.max_depth is None:
            raise NotConfigured
        self.max_depth = options.max_depth
        self.max_rounds = options.max_rounds
        self.defer = options.defer
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def scheduler(self) -> StateScheduler | None:
        return round_scheduler(self.crawler)

    def should_start_round(self, next_round: int) -> bool:
        """Whether round ``next_round`` may start (there is something to crawl)."""
        return self.max_rounds is None or next_round <= self.max_rounds

    def spider_opened(self) -> None:
        scheduler = self.scheduler
        if scheduler is not None and self.crawler.stats is not None:
            # resumed in round r: rounds 0 .. r-1 were completed
            self.crawler.stats.set_value(STATS_ROUNDS, scheduler.round)

    def spider_idle(self) -> None:
        scheduler = self.scheduler
        if scheduler is None or scheduler.has_pending_requests():
            return
        finished = scheduler.round
        if self.crawler.stats is not None:
            self.crawler.stats.set_value(STATS_ROUNDS, finished + 1)
        if not scheduler.deferring or not scheduler.deferred_count():
            return
        if not self.should_start_round(finished + 1):
            logger.info(
                "Round %d done; not starting round %d (max_rounds=%s)",
                finished,
                finished + 1,
                self.max_rounds,
            )
            return
        waiting = scheduler.deferred_count()
        if scheduler.start_round():
            logger.info(
                "Round %d done; round %d starts from %d deferred URLs",
                finished,
                scheduler.round,
                waiting,
            )
            # Scrapy asks the scheduler again after a DontCloseSpider only
            # on its 5-second heartbeat: every round change would wait it
            wake_engine(self.crawler.engine)
            raise DontCloseSpider

    def spider_closed(self, reason: str) -> None:
        stats = self.crawler.stats
        if stats is None:
            return
        rounds = stats.get_value(STATS_ROUNDS, 0)
        per_round = []
        for r in range(rounds + 1):
            pages = stats.get_value(f"{STATS_PAGES}/{r}")
            if pages is not None:
                per_round.append(f"{r}:{pages}")
        logger.info(
            "Depth: max_depth=%d, %d rounds completed, pages per round %s, "
            "deepest depth %s, %d URLs %s, %d left deferred",
            self.max_depth,
            rounds,
            " ".join(per_round) or "-",
            stats.get_value(STATS_DEEPEST, 0),
            stats.get_value(STATS_DEFERRED if self.defer else STATS_DROPPED, 0),
            "deferred" if self.defer else "dropped",
            stats.get_value(STATS_DEFERRED_LEFT, 0),
        )
