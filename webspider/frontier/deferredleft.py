"""The deferred frontier left when the crawl ends or pauses.

With a depth cap, links beyond it are deferred to later rounds
(webspider.frontier.depth, webspider.frontier.rounds). When the crawl ends
(not when Ctrl-C pauses it) with URLs still deferred, they are written to
``<output>/deferred.jsonl`` (url, depth, referer, round: a URL list for
``-a start_urls=@<path>``); when it ends or pauses, they are recorded as
skipped (reason ``depth``, with the page each was found on) and counted in
STATS_DEFERRED_LEFT. A deferral itself is no skip until then: a later
round fetches the URL; these never were fetched. Skips are stats a resumed
crawl does not carry for this reason (webspider.reports.crawlreport), so a
paused or killed crawl's leftovers are not counted twice.

A crawl stopped by Ctrl-C is paused, not over: the frontier waits in the
crawl state for the same command to resume it, and no deferred.jsonl is
written. The scheduler (webspider.frontier.scheduler) calls
``end_frontier`` before the commit that marks a crawl finished: a kill
after it left no deferred.jsonl (or an earlier crawl's) for a crawl the
next run takes as finished.
"""

from __future__ import annotations

import json
import logging
from typing import IO, TYPE_CHECKING, Any

from webspider import skips
from webspider.keys import STATS_DEFERRED_LEFT
from webspider.utils.atomic import open_atomic

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.crawler import Crawler

    from webspider.frontier.redisstate import RedisState
    from webspider.frontier.sqlite import SQLiteState

logger = logging.getLogger(__name__)

#: deferred URLs left at the end recorded as skipped in one call at most
SKIP_BATCH = 1000


def end_frontier(
    crawler: Crawler,
    state: SQLiteState | RedisState,
    path: Path,
    reason: str,
    left: int,
) -> None:
    """Count the ``left`` URLs still deferred as the crawl closes for
    ``reason``, record them as skipped and, unless paused, write them to
    ``path`` (deferred.jsonl; removed when none is left)."""
    assert crawler.stats is not None
    crawler.stats.set_value(STATS_DEFERRED_LEFT, left)
    paused = reason == "shutdown"
    if not left:
        if not paused:  # not a leftover of an earlier crawl into this output
            path.unlink(missing_ok=True)
        return
    if paused:
        record_deferred(crawler, state, None)
        return
    # streamed (the frontier can hold millions), and never left half-written
    with open_atomic(path) as fh:
        written = record_deferred(crawler, state, fh)
    logger.info("%d deferred URLs not crawled, written to %s", written, path)


def record_deferred(
    crawler: Crawler, state: SQLiteState | RedisState, fh: IO[str] | None
) -> int:
    """Record every deferred URL as skipped (reason ``depth``), a batch
    a referring page, and write its line (url, depth, referer, round) to
    ``fh``; their number."""
    written = 0
    batch: list[tuple[str, str]] = []
    referer: str | None = None
    for entry in state.iter_deferred():
        if fh is not None:
            record: dict[str, Any] = {
                "url": entry.url,
                "depth": entry.depth,
                "referer": entry.referer,
                "round": entry.round,
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        if batch and (entry.referer != referer or len(batch) >= SKIP_BATCH):
            skips.record_skips(crawler, batch, referer)
            batch = []
        referer = entry.referer
        batch.append((entry.url, skips.DEPTH))
        written += 1
    skips.record_skips(crawler, batch, referer)
    return written
