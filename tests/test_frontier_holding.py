"""How many requests of a delayed origin one worker holds (pure)."""

from __future__ import annotations

from webspider.frontier.holding import PER_DELAYED_ORIGIN, OriginHolds
from webspider.frontier.state import Lease, StoredRequest
from webspider.utils.url import origin_of


def leases(*urls: str, first: int = 1) -> list[Lease]:
    return [
        Lease(first + i, StoredRequest(key=url, url=url), deadline=0.0)
        for i, url in enumerate(urls)
    ]


def test_origins_without_a_delay_are_not_bounded():
    holds = OriginHolds(download_delay=0)
    assert not holds.active
    got = leases(*(f"http://a.test/{i}" for i in range(10)))
    kept, back = holds.admit(got)
    assert kept == got
    assert back == []
    assert holds.full() == []


def test_a_crawl_delay_origin_is_held_two_at_a_time():
    holds = OriginHolds(download_delay=0)
    holds.crawl_delay(origin_of("http://slow.test/"), 1.0)
    assert holds.active
    got = leases(*(f"http://slow.test/{i}" for i in range(5)), "http://fast.test/x")
    kept, back = holds.admit(got)
    assert [lease.ticket for lease in kept] == [1, 2, 6]
    assert back == [3, 4, 5]
    assert holds.full() == ["http://slow.test"]
    # one done: a place again, and the origin is leased from again
    holds.done([1, 6])
    assert holds.full() == []
    kept, back = holds.admit(
        leases("http://slow.test/9", "http://slow.test/8", first=7)
    )
    assert [lease.ticket for lease in kept] == [7]
    assert back == [8]
    assert holds.held == {"http://slow.test": PER_DELAYED_ORIGIN}


def test_download_delay_bounds_every_origin_and_a_lifted_delay_frees_it():
    holds = OriginHolds(download_delay=0.5)
    kept, back = holds.admit(leases(*(f"http://a.test/{i}" for i in range(3))))
    assert (len(kept), back) == (2, [3])
    holds.clear()
    assert holds.held == {}

    holds = OriginHolds(download_delay=0)
    holds.crawl_delay(origin_of("http://a.test/"), 2.0)
    holds.crawl_delay(origin_of("http://a.test/"), 0.0)  # robots.txt dropped it
    assert not holds.active
