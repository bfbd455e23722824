"""What is particular to the Redis crawl state: several workers on one
crawl, leases of a dead worker, rounds started once, untrusted entries,
exactness under fingerprint collisions, a Redis that goes away and comes
back, and the password kept out of messages. A real redis-server
(tests/support/redis_server.py)."""

from __future__ import annotations

import logging
import pickle
import threading
import time
from pathlib import Path

import pytest
import redis

from tests.support.redis_server import RedisServer
from webspider.frontier import redisstate
from webspider.frontier.options import mask_password as mask_url
from webspider.frontier.redisstate import RedisState, crawl_prefix
from webspider.frontier.state import Counts, StateError, StoredRequest


def req(path: str, depth: int = 0, host: str = "a.test") -> StoredRequest:
    url = f"http://{host}/{path}"
    return StoredRequest(key=url, url=url, depth=depth)


def paths(leases) -> list[str]:
    return sorted(lease.request.url.rsplit("/", 1)[1] for lease in leases)


def test_workers_share_one_queue_and_never_get_the_same_request(redis_url):
    one, two = (
        RedisState(redis_url, "c", worker="1"),
        RedisState(redis_url, "c", worker="2"),
    )
    one.add([req(f"p{i}") for i in range(10)])
    assert two.add([req("p3"), req("new")]) == [False, True]
    got1 = one.lease(6, deadline=1e12, strict=False)
    got2 = two.lease(6, deadline=1e12, strict=False)
    assert len(got1) == 6 and len(got2) == 5
    assert not set(paths(got1)) & set(paths(got2))
    assert "http://a.test/new" in one and "http://a.test/p9" in two
    one.close()
    two.close()


def test_the_leases_of_a_dead_worker_come_back_after_their_deadline(redis_url):
    dead, alive = RedisState(redis_url, "c", worker="d"), RedisState(redis_url, "c")
    dead.add([req("a"), req("b")])
    held = dead.lease(2, deadline=100.0)
    # the dead worker never acks nor closes; the living one expires its leases
    alive.renew([held[0].ticket], 300.0)  # renewing is harmless to anyone
    assert alive.expire(200.0) == 1
    assert paths(alive.lease(5, deadline=1e12)) == ["b"]
    assert alive.expire(400.0) == 1
    assert paths(alive.lease(5, deadline=1e12)) == ["a"]
    assert alive.counts() == Counts(queued=0, leased=2, done=0, deferred=0)


def test_a_release_by_a_worker_that_lost_its_lease_does_nothing(redis_url):
    slow, other = RedisState(redis_url, "c", worker="s"), RedisState(redis_url, "c")
    slow.add([req("a")])
    [lease] = slow.lease(1, deadline=100.0)
    other.expire(200.0)
    [again] = other.lease(1, deadline=1e12)
    slow.release([lease.ticket])  # late: the lease is the other's now
    assert other.counts() == Counts(queued=0, leased=1, done=0, deferred=0)
    other.ack([again.ticket])
    assert other.counts().done == 1


def test_a_round_starts_once_for_all_workers(redis_url):
    one, two = (
        RedisState(redis_url, "c", worker="1"),
        RedisState(redis_url, "c", worker="2"),
    )
    one.defer([req("x", 3), req("y", 4)])
    assert one.next_round() == 2
    # the other worker, idle at the same moment, joins the round one started
    assert two.next_round() == 2
    assert (one.round, two.round) == (1, 1)
    assert one.counts() == Counts(queued=2, leased=0, done=0, deferred=0)
    assert two.next_round() == 0  # nothing deferred in round 1


def test_pending_while_another_worker_holds_leases(redis_url):
    one, two = (
        RedisState(redis_url, "c", worker="1"),
        RedisState(redis_url, "c", worker="2"),
    )
    assert not two.pending()
    one.add([req("a")])
    [lease] = one.lease(1, deadline=1e12)
    assert two.pending()  # nothing queued, but one's page may bring links
    one.ack([lease.ticket])
    time.sleep(0.25)  # past the short trust in a positive answer
    assert not two.pending()


def test_close_puts_back_what_the_worker_holds(redis_url):
    one = RedisState(redis_url, "c")
    one.add([req("a"), req("b")])
    one.lease(2, deadline=1e12)
    one.close()
    two = RedisState(redis_url, "c")
    assert two.counts() == Counts(queued=2, leased=0, done=0, deferred=0)


def test_a_pickled_entry_is_dropped_never_unpickled(redis_url, tmp_path, caplog):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    payload = pickle.dumps(Exploit())
    state = RedisState(redis_url, "c")
    state.add([req("good0"), req("good1")])
    r = redis.Redis.from_url(redis_url)
    p = crawl_prefix("c")
    queue = p + "q:http://a.test"
    # as scrapy-redis pushes requests: a pickle as the queue member
    r.zadd(queue, {payload: 0})
    # a pickle in place of a request record, under a queued id
    r.hset(p + "r", "777", payload)
    r.zadd(queue, {"000000000777": 0})
    # a pickle behind a well-formed header
    r.hset(p + "r", "778", b"\0" * 8 + b"0:0:0:http://a.test\n" + payload)
    r.zadd(queue, {"000000000778": 0})
    with caplog.at_level(logging.WARNING, logger=redisstate.__name__):
        leases = state.lease(10, deadline=1e12)
    assert paths(leases) == ["good0", "good1"]
    assert not marker.exists()
    assert state.bad_entries == 3
    lines = [m for m in caplog.messages if "not webspider data" in m]
    assert len(lines) == 3
    assert any("777" in m for m in lines) and any("778" in m for m in lines)
    assert any(repr(payload[:40]) in m for m in lines)
    # the crawl goes on: nothing left queued or leased by the junk
    state.ack([lease.ticket for lease in leases])
    assert not state.pending()


def test_a_fingerprint_collision_drops_no_url(redis_url, monkeypatch):
    monkeypatch.setattr(redisstate, "fingerprint", lambda key: 7)
    state = RedisState(redis_url, "c")
    assert state.defer([req("d", 3)]) == [True]
    assert state.add([req("a"), req("b"), req("a"), req("c")]) == [
        True,
        True,
        False,
        True,
    ]
    assert ["http://a.test/" + k in state for k in "abcdz"] == [True] * 3 + [False] * 2
    assert state.next_round() == 1
    assert "http://a.test/d" in state
    assert sorted(x.request.key[-1] for x in state.lease(9, deadline=1e12)) == list(
        "abcd"
    )


def test_seen_set_buckets_stay_compact(redis_url):
    state = RedisState(redis_url, "c")
    state.add([req(f"page/{i}.html") for i in range(3000)])
    r = redis.Redis.from_url(redis_url)
    buckets = list(
        r.scan_iter(
            match=crawl_prefix("c").replace("{", "\\{").replace("}", "\\}") + "s:*"
        )
    )
    assert buckets
    assert {r.object("encoding", b) for b in buckets[:50]} == {b"listpack"}
    # the exact key is stored, shortened to the origin's number and the path
    [value] = r.hvals(buckets[0])[:1]
    assert value.split(b"|")[1].startswith(b"/page/")


def test_another_format_is_refused(redis_url):
    RedisState(redis_url, "c").set_meta("format", "99")
    with pytest.raises(StateError, match="format 99"):
        RedisState(redis_url, "c")


def test_crawls_of_other_names_are_apart_and_fresh_empties_one(redis_url):
    RedisState(redis_url, "one").add([req("a")])
    RedisState(redis_url, "two").add([req("b")])
    assert "http://a.test/a" not in RedisState(redis_url, "two")
    assert len(RedisState(redis_url, "one", fresh=True)) == 0
    assert len(RedisState(redis_url, "two")) == 1


def test_the_password_is_masked():
    assert mask_url("redis://u:s3cret@h:6379/0") == "redis://u:***@h:6379/0"
    assert mask_url("rediss://:s3cret@h/1") == "rediss://:***@h/1"
    assert mask_url("redis://h:6379/0") == "redis://h:6379/0"


def test_waits_for_a_redis_restart_and_loses_nothing(tmp_path: Path, caplog):
    with RedisServer(tmp_path / "redis", appendonly=True) as server:
        state = RedisState(server.url, "c")
        state.add([req("a"), req("b")])
        [lease] = state.lease(1, deadline=1e12)
        server.stop()
        restarted = threading.Timer(1.0, server.start)
        restarted.start()
        with caplog.at_level(logging.WARNING, logger=redisstate.__name__):
            state.ack([lease.ticket])  # waits for Redis
            got = state.lease(5, deadline=1e12)
        restarted.join()
        assert paths(got) == ["b"]
        assert state.counts() == Counts(queued=0, leased=1, done=1, deferred=0)
        assert [m for m in caplog.messages if "unreachable" in m][:1]
        assert len([m for m in caplog.messages if "unreachable" in m]) == 1
        assert any("is back" in m for m in caplog.messages)
        state.close()


def test_a_redis_that_lost_the_state_stops_the_worker(tmp_path: Path):
    with RedisServer(tmp_path / "redis") as server:  # no persistence
        state = RedisState(server.url, "c")
        state.add([req("a")])
        server.stop()
        threading.Timer(0.5, server.start).start()
        with pytest.raises(StateError, match="gone"):
            state.lease(1, deadline=1e12)
