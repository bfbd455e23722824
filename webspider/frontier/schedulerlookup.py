"""The crawl's scheduler, from outside it: found and checked.

The depth middleware, the round control and the crawl report ask the crawl
for its StateScheduler (``round_scheduler``: None with another SCHEDULER);
the spider and the reports ask for the URLs the crawl has seen
(``seen_urls``: the crawl state's seen-set, or webspider's
DUPEFILTER_CLASS's with another scheduler); the checks before the crawl
starts refuse a depth cap that defers links without it
(``check_scheduler``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from webspider.config import ConfigError
from webspider.frontier.dupefilter import dupefilter_urls
from webspider.frontier.options import DepthOptions
from webspider.frontier.scheduler import StateScheduler

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from webspider.frontier.seen import SeenKeys


def round_scheduler(crawler: Crawler) -> StateScheduler | None:
    """The crawl's StateScheduler (None before the engine opens, or when
    SCHEDULER is another class)."""
    engine = crawler.engine
    scheduler = engine.scheduler if engine is not None else None
    return scheduler if isinstance(scheduler, StateScheduler) else None


def seen_urls(crawler: Crawler) -> SeenKeys | None:
    """The canonical URLs the crawl has requested with GET (fetched, queued
    or filtered on the way), for the spider and the reports: the crawl
    state's seen-set, or with another SCHEDULER webspider's DUPEFILTER_CLASS
    (None before the engine opens the scheduler, or when neither is
    webspider's: nothing is known then)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # not set before the crawl starts (Scrapy 2.19)
        return None
    scheduler = engine.scheduler if engine is not None else None
    if isinstance(scheduler, StateScheduler):
        return scheduler.state
    return dupefilter_urls(getattr(scheduler, "df", None))


def check_scheduler(settings: BaseSettings) -> None:
    """Deferring over-depth links to later rounds needs this scheduler."""
    options = DepthOptions.of(settings)
    if options.max_depth is None or not options.defer:
        return
    scheduler = load_object(settings["SCHEDULER"])
    if StateScheduler not in getattr(scheduler, "__mro__", ()):
        raise ConfigError(
            "max_depth defers links to later rounds, which needs SCHEDULER = "
            "webspider.frontier.scheduler.StateScheduler (or -a defer=0)"
        )
