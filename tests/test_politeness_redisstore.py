"""The shared politeness records, against a real redis-server."""

from __future__ import annotations

import time

import pytest
from redis import Redis

from webspider.politeness.redisstore import (
    BUSY,
    CLAIMED,
    GO,
    PAUSED,
    RECORD,
    WAIT,
    RedisPoliteness,
)

ORIGIN = "http://site.test:8080"


@pytest.fixture
def store(redis_url: str) -> RedisPoliteness:
    return RedisPoliteness(Redis.from_url(redis_url))


def other(store: RedisPoliteness) -> RedisPoliteness:
    """A second worker: its own connection to the same Redis."""
    kwargs = store.client.connection_pool.connection_kwargs
    return RedisPoliteness(Redis(host=kwargs["host"], port=kwargs["port"]))


# -- robots.txt -------------------------------------------------------------------
def test_one_claim_per_origin_then_everyone_reads_the_record(store):
    b = other(store)
    assert store.robots_claim(ORIGIN, "a", 30)[0] == CLAIMED
    assert b.robots_claim(ORIGIN, "b", 30)[0] == WAIT
    assert store.robots_claim("http://other.test:80", "a", 30)[0] == CLAIMED
    store.robots_put(ORIGIN, '{"v":1}', 60, "a")
    answer, data, fresh_for = b.robots_claim(ORIGIN, "b", 30)
    assert (answer, data) == (RECORD, b'{"v":1}')
    assert 59 < fresh_for <= 60
    # the claim went with the record
    assert store.client.exists(store.key("robots-claim", ORIGIN)) == 0


def test_a_dead_workers_claim_runs_out(store):
    assert store.robots_claim(ORIGIN, "dead", 0.2)[0] == CLAIMED
    assert store.robots_claim(ORIGIN, "b", 30)[0] == WAIT
    time.sleep(0.3)
    assert store.robots_claim(ORIGIN, "b", 30)[0] == CLAIMED


def test_a_renewed_claim_holds_and_only_its_holder_drops_it(store):
    assert store.robots_claim(ORIGIN, "a", 0.3)[0] == CLAIMED
    store.renew([(ORIGIN, "a")], [], 30)
    time.sleep(0.4)
    assert store.robots_claim(ORIGIN, "b", 30)[0] == WAIT
    store.robots_unclaim(ORIGIN, "b")  # not b's to drop
    assert store.robots_claim(ORIGIN, "b", 30)[0] == WAIT
    store.robots_unclaim(ORIGIN, "a")
    assert store.robots_claim(ORIGIN, "b", 30)[0] == CLAIMED


def test_the_record_expires_with_the_rules_cache_time(store):
    store.robots_claim(ORIGIN, "a", 30)
    store.robots_put(ORIGIN, "{}", 0.2, "a")
    assert store.robots_claim(ORIGIN, "b", 30)[0] == RECORD
    time.sleep(0.3)
    assert store.robots_claim(ORIGIN, "b", 30)[0] == CLAIMED


# -- starts ---------------------------------------------------------------------------
def test_starts_are_reserved_one_delay_apart_for_all_workers(store):
    b = other(store)
    waits = []
    for i, worker in enumerate([store, b, store, b]):
        verdict, seconds = worker.turn(
            ORIGIN, f"t{i}", delay=1.0, limit=0, lease_timeout=30
        )
        assert verdict == GO
        waits.append(seconds)
    # reserved back to back within a few ms: 0, 1, 2, 3 seconds from now
    for i, seconds in enumerate(waits):
        assert i - 0.1 < seconds <= i


def test_no_delay_no_wait(store):
    for i in range(3):
        assert store.turn(ORIGIN, f"t{i}", delay=0, limit=0, lease_timeout=30) == (
            GO,
            0.0,
        )


def test_a_start_reserved_ahead_is_not_overtaken_by_one_without_delay(store):
    """robots.txt goes out before its Crawl-delay is known (delay 0); a later
    ask with no delay never starts before a start already reserved."""
    store.turn(ORIGIN, "a", delay=0, limit=0, lease_timeout=30)
    _, first = store.turn(ORIGIN, "b", delay=2.0, limit=0, lease_timeout=30)
    assert 1.9 < first <= 2.0
    _, second = store.turn(ORIGIN, "c", delay=0, limit=0, lease_timeout=30)
    assert second >= first - 0.05


def test_places_are_limited_across_workers_and_freed(store):
    b = other(store)
    assert store.turn(ORIGIN, "a1", delay=0, limit=2, lease_timeout=30)[0] == GO
    assert b.turn(ORIGIN, "b1", delay=0, limit=2, lease_timeout=30)[0] == GO
    assert b.turn(ORIGIN, "b2", delay=0, limit=2, lease_timeout=30)[0] == BUSY
    assert (
        store.turn("http://x.test:80", "x", delay=0, limit=2, lease_timeout=30)[0] == GO
    )
    store.release(ORIGIN, "a1")
    assert b.turn(ORIGIN, "b2", delay=0, limit=2, lease_timeout=30)[0] == GO
    assert store.in_flight(ORIGIN) == 2


def test_places_given_back_with_a_turn_are_free_for_it(store):
    x = "http://x.test:80"
    assert store.turn(ORIGIN, "a1", delay=0, limit=1, lease_timeout=30)[0] == GO
    assert store.turn(x, "x1", delay=0, limit=1, lease_timeout=30)[0] == GO
    assert store.turn(ORIGIN, "a2", delay=0, limit=1, lease_timeout=30)[0] == BUSY
    # the place of a1 given back in the same call: a2 takes it
    verdict, _ = store.turn(
        ORIGIN, "a2", delay=0, limit=1, lease_timeout=30, release=[(ORIGIN, "a1")]
    )
    assert verdict == GO
    # given back even when the turn itself waits (another origin's, paused)
    store.pause(ORIGIN, 5.0)
    verdict, _ = store.turn(
        ORIGIN, "a3", delay=0, limit=1, lease_timeout=30, release=[(x, "x1")]
    )
    assert verdict == PAUSED
    assert store.in_flight(x) == 0
    assert store.in_flight(ORIGIN) == 1
    store.release_many([(ORIGIN, "a2"), (x, "none")])
    assert store.in_flight(ORIGIN) == 0


def test_a_dead_workers_place_comes_free_after_the_lease(store):
    assert store.turn(ORIGIN, "dead", delay=0, limit=1, lease_timeout=0.2)[0] == GO
    assert store.turn(ORIGIN, "b", delay=0, limit=1, lease_timeout=30)[0] == BUSY
    time.sleep(0.3)
    assert store.turn(ORIGIN, "b", delay=0, limit=1, lease_timeout=30)[0] == GO


def test_a_renewed_place_is_kept(store):
    assert store.turn(ORIGIN, "a", delay=0, limit=1, lease_timeout=0.3)[0] == GO
    store.renew([], [(ORIGIN, "a")], 30)
    time.sleep(0.4)
    assert store.turn(ORIGIN, "b", delay=0, limit=1, lease_timeout=30)[0] == BUSY
    # renewing a place already given up does not take it back
    store.release(ORIGIN, "a")
    store.renew([], [(ORIGIN, "a")], 30)
    assert store.in_flight(ORIGIN) == 0


def test_a_pause_holds_every_worker(store):
    b = other(store)
    assert store.pause(ORIGIN, 2.0)
    assert not b.pause(ORIGIN, 1.0)  # a shorter one changes nothing
    verdict, seconds = b.turn(ORIGIN, "b", delay=0, limit=0, lease_timeout=30)
    assert verdict == PAUSED
    assert 1.9 < seconds <= 2.0
    assert 1.9 < store.paused_for(ORIGIN) <= 2.0
    assert store.paused_for("http://x.test:80") == 0
    # a paused turn takes no place
    assert store.in_flight(ORIGIN) == 0


def test_a_pause_ends(store):
    store.pause(ORIGIN, 0.2)
    time.sleep(0.3)
    assert store.turn(ORIGIN, "a", delay=0, limit=1, lease_timeout=30)[0] == GO
    assert store.paused_for(ORIGIN) == 0


def test_a_start_that_went_late_pushes_the_next_one_back(store):
    # the first start is made now; the next two are reserved 0.3 s apart
    # (+0.3 for a, +0.6 for b). a's worker was busy and its request only
    # went at +0.5 (confirmed with go), so b, woken at its reserved +0.6,
    # waits until +0.8: 0.3 s after a's actual start, not after its reserved
    b = other(store)
    assert store.turn(ORIGIN, "0", delay=0.3, limit=0, lease_timeout=30) == (GO, 0.0)
    t0 = time.monotonic()
    verdict, wait_a = store.turn(ORIGIN, "a", delay=0.3, limit=0, lease_timeout=30)
    assert verdict == GO
    assert 0.25 < wait_a <= 0.3
    verdict, wait_b = b.turn(ORIGIN, "b", delay=0.3, limit=0, lease_timeout=30)
    assert verdict == GO
    assert 0.55 < wait_b <= 0.6
    time.sleep(max(0.0, t0 + 0.5 - time.monotonic()))
    assert store.go(ORIGIN, 0.3) == (GO, 0.0)  # a's start, late, made now
    time.sleep(max(0.0, t0 + 0.6 - time.monotonic()))
    verdict, more = b.go(ORIGIN, 0.3)  # b's reserved moment: too early now
    assert verdict == WAIT
    assert 0.1 < more < 0.3  # about 0.2
    time.sleep(more)
    assert b.go(ORIGIN, 0.3) == (GO, 0.0)
    # the next reservation counts from b's start, made just now
    _, wait = store.turn(ORIGIN, "c", delay=0.3, limit=0, lease_timeout=30)
    assert 0.25 < wait <= 0.3


def test_go_waits_for_a_pause(store):
    store.turn(ORIGIN, "a", delay=1.0, limit=0, lease_timeout=30)
    store.pause(ORIGIN, 2.0)
    verdict, seconds = store.go(ORIGIN, 1.0)
    assert verdict == PAUSED
    assert 1.9 < seconds <= 2.0
