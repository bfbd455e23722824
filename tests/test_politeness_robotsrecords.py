"""robots.txt answers kept as records (memory and the crawl state): read back
within the TTL, fetched again after it, only answers that were read."""

from __future__ import annotations

from time import time

from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from tests.support.records import reopen
from tests.support.records import store as store  # noqa: PLC0414
from webspider import signals
from webspider.politeness.robotsrecords import NS_ROBOTS, RecordsRobotsStore
from webspider.politeness.robotsstore import (
    READY,
    UNREACHABLE,
    Obtained,
    RobotsRecord,
)
from webspider.politeness.robotstxt import (
    PENDING,
    OriginRobots,
    RobotsTxtMiddleware,
)
from webspider.spiders.webspider import WebSpider

ORIGIN = ("https", "x.test", 443)


async def obtain(
    robots: RecordsRobotsStore, record: RobotsRecord, ttl: float = 3600
) -> tuple[Obtained, int]:
    fetched: list[RobotsRecord] = []

    async def fetch() -> RobotsRecord:
        fetched.append(record)
        return record

    got = await robots.obtain(ORIGIN, fetch, ttl)
    return got, len(fetched)


async def test_a_stored_answer_is_not_fetched_again_within_the_ttl(request, store):
    text = "User-agent: *\nDisallow: /private/\n"
    got, fetches = await obtain(
        RecordsRobotsStore(store), RobotsRecord(READY, text, fetched=time())
    )
    assert (fetches, got.fetched_here) == (1, True)
    store = reopen(request, store)  # a resumed crawl
    got, fetches = await obtain(RecordsRobotsStore(store), RobotsRecord(READY, "other"))
    assert fetches == 0
    assert not got.fetched_here
    assert got.record.text == text
    assert 3500 < got.fresh_for <= 3600


async def test_a_stale_answer_is_fetched_again(store):
    robots = RecordsRobotsStore(store)
    await obtain(robots, RobotsRecord(READY, "old", fetched=time() - 7200))
    got, fetches = await obtain(robots, RobotsRecord(READY, "new", fetched=time()))
    assert fetches == 1 and got.record.text == "new"
    got, fetches = await obtain(robots, RobotsRecord(READY, "newer", fetched=time()))
    assert fetches == 0 and got.record.text == "new"


async def test_an_unreachable_origin_is_tried_again(store):
    robots = RecordsRobotsStore(store)
    await obtain(robots, RobotsRecord(UNREACHABLE, reason="HTTP 503", fetched=time()))
    assert store.records(NS_ROBOTS).count() == 0
    _, fetches = await obtain(robots, RobotsRecord(READY, None, fetched=time()))
    assert fetches == 1


async def test_a_record_that_does_not_read_back_is_fetched_again(store):
    store.records(NS_ROBOTS).put("https://x.test:443", {"v": 99, "text": "x"})
    _, fetches = await obtain(
        RecordsRobotsStore(store), RobotsRecord(READY, "y", fetched=time())
    )
    assert fetches == 1


def test_the_middleware_keeps_the_rules_of_the_most_recently_used_origins(store):
    crawler = get_crawler(WebSpider, {"ROBOTSTXT_OBEY": True})
    mw = build_from_crawler(RobotsTxtMiddleware, crawler)
    crawler.signals.send_catch_log(signals.crawl_state_opened, records=store)
    assert mw.store.records is store.records(NS_ROBOTS)
    mw.max_origins = 2
    for i in range(3):
        mw._origins[("https", f"{i}.test", 443)] = OriginRobots(state=READY)
    mw._origins.move_to_end(("https", "0.test", 443))  # used again
    mw._origins[("https", "p.test", 443)] = OriginRobots(state=PENDING)
    mw._forget()
    assert list(mw._origins) == [
        ("https", "0.test", 443),
        ("https", "p.test", 443),
    ]
