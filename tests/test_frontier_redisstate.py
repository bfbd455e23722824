"""What is particular to the Redis crawl state: several workers on one
crawl, leases of a dead worker, rounds started once, untrusted entries,
URLs sharing a bucket, the seen-set's layout and old layouts refused, a Redis that goes away and comes
back, and the password kept out of messages. A real redis-server
(tests/support/redis_server.py)."""

from __future__ import annotations

import hashlib
import logging
import pickle
import threading
import time
from pathlib import Path

import pytest
import redis
from scrapy.settings import Settings

from tests.support.redis_server import RedisServer
from webspider import settings as defaults
from webspider.config import ConfigError
from webspider.frontier import redisrecords, redisstate
from webspider.frontier.options import mask_password as mask_url
from webspider.frontier.redisstate import RedisState, crawl_prefix
from webspider.frontier.resume import check_crawl_state, open_crawl_state
from webspider.frontier.state import Counts, StateError, StoredRequest
from webspider.storage import advice_for, damaged_state


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


def test_a_pickled_record_is_ignored_never_unpickled(redis_url, tmp_path, caplog):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    payload = pickle.dumps(Exploit())
    state = RedisState(redis_url, "c")
    index = state.records("mirror.index")
    index.put_many([("http://a.test/a", "a.html"), ("http://a.test/c", "c.html")])
    r = redis.Redis.from_url(redis_url)
    p = crawl_prefix("c")
    r.hset(p + "R:mirror.index:v", "http://a.test/b", payload)
    r.zadd(p + "R:mirror.index:k", {"http://a.test/b": 0})
    with caplog.at_level(logging.WARNING, logger=redisrecords.__name__):
        assert index.get("http://a.test/b") is None
        assert index.get_many(["http://a.test/b", "http://a.test/c"]) == [
            None,
            "c.html",
        ]
        assert list(index.items()) == [
            ("http://a.test/a", "a.html"),
            ("http://a.test/c", "c.html"),
        ]
    assert not marker.exists()
    lines = [m for m in caplog.messages if "not JSON" in m]
    assert len(lines) == 3 and all("http://a.test/b" in m for m in lines)


def test_workers_share_records_and_put_new_is_taken_once(redis_url):
    one, two = RedisState(redis_url, "c", worker="1"), RedisState(redis_url, "c")
    results = []

    def claim(state: RedisState, who: str) -> None:
        for i in range(200):
            results.append((i, who, state.records("dupes").put_new(f"h{i}", who)))
            state.records("n").incr("pages")

    threads = [
        threading.Thread(target=claim, args=(one, "1")),
        threading.Thread(target=claim, args=(two, "2")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = {(i, who) for i, who, put in results if put}
    assert len(won) == 200  # each hash taken by exactly one worker
    assert all(one.records("dupes").get(f"h{i}") == w for i, w in won)
    assert two.records("n").get("pages") == 400
    assert one.records("dupes").count("h1") == 111  # h1, h10-h19, h100-h199


def test_record_writes_go_with_the_next_call_in_order(redis_url):
    r = redis.Redis.from_url(redis_url)
    one, other = RedisState(redis_url, "c", worker="1"), RedisState(redis_url, "c")
    one.add([req("a")])
    [lease] = one.lease(1, deadline=1e12)
    links, seen_there = one.records("links"), other.records("links")
    r.config_resetstat()
    for i in range(100):
        links.put(f"k{i}", i)
    links.delete_prefix("k1")  # k1, k10-k19
    # the worker reads its own writes, and they cost no round trip of their
    # own: two reads, two MULTIs
    assert links.get("k5") == 5
    assert links.get("k12") is None
    assert int(r.info("commandstats")["cmdstat_exec"]["calls"]) == 2
    links.put("late", 1)
    assert seen_there.get("late") is None  # not sent yet
    one.ack([lease.ticket])  # sent before the ack: a page's records first
    assert seen_there.get("late") == 1
    assert seen_there.count() == 100 - 11 + 1
    # a script of the state goes in the same MULTI as the writes before it
    r.config_resetstat()
    links.put("with-seen", 1)
    assert one.contains_many([req("a").key, req("b").key]) == [True, False]
    links.put("with-ack", 1)
    one.ack([999])  # an ended lease: nothing to do
    stats = r.info("commandstats")
    assert int(stats["cmdstat_exec"]["calls"]) == 2
    assert "cmdstat_evalsha" not in stats
    assert seen_there.get_many(["with-seen", "with-ack"]) == [1, 1]
    links.put("at-close", 1)
    one.close()
    assert seen_there.get("at-close") == 1


def _finished_crawl(redis_url: str, urls: int) -> None:
    """A finished crawl of ``urls`` URLs (many buckets: emptying takes a while)."""
    state = RedisState(redis_url, "c")
    for start in range(0, urls, 5000):
        state.add([req(f"old{i}") for i in range(start, start + 5000)])
    state.records("r").put("old", 1)
    state.set_meta("run", "3")
    state.set_meta("finished", "1")
    state.close()


def test_workers_opening_a_finished_crawl_together_lose_nothing(redis_url):
    _finished_crawl(redis_url, 40000)
    barrier = threading.Barrier(3)
    emptied: dict[str, bool] = {}

    def worker(name: str) -> None:
        state = RedisState(redis_url, "c", worker=name)
        barrier.wait()
        emptied[name] = state.new_run_if_finished()
        # what a worker does first: its start URL, a record
        state.add([req(f"start-{name}")])
        state.records("r").put(name, True)
        state.close()

    threads = [threading.Thread(target=worker, args=(str(i),)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(emptied.values()) == [False, False, True]
    state = RedisState(redis_url, "c")
    # every worker's start URL is there, the last run's URLs are not
    assert (
        state.contains_many([f"http://a.test/start-{i}" for i in range(3)])
        == [True] * 3
    )
    assert "http://a.test/old7" not in state
    assert state.counts() == Counts(queued=3, leased=0, done=0, deferred=0)
    assert dict(state.records("r").items()) == {"0": True, "1": True, "2": True}
    assert state.get_meta("run") == "4"
    assert state.get_meta("finished") is None
    # the next worker joins the run
    assert state.new_run_if_finished() is False
    assert state.counts().queued == 3


def test_a_worker_that_died_emptying_a_finished_crawl_is_taken_over(
    redis_url, monkeypatch
):
    _finished_crawl(redis_url, 5000)
    monkeypatch.setattr(redisstate, "_NEW_RUN_TTL", 0.3)
    r = redis.Redis.from_url(redis_url)
    # a claim whose worker died: nobody renews it
    r.set(crawl_prefix("c") + "newrun", "dead", px=300)
    state = RedisState(redis_url, "c")
    assert state.new_run_if_finished() is True
    assert len(state) == 0
    assert state.get_meta("run") == "4"


def one_bucket(key: str) -> bytes:
    # every key in bucket 0007; the other 10 bytes still tell them apart
    return b"\x00\x07" + hashlib.blake2b(key.encode(), digest_size=10).digest()


def test_urls_sharing_a_bucket_stay_apart(redis_url, monkeypatch):
    monkeypatch.setattr(redisstate, "seen_fingerprint", one_bucket)
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
    r = redis.Redis.from_url(redis_url)
    assert r.hlen(crawl_prefix("c") + "s:0007") == 4


def test_keys_in_one_bucket_never_meet(redis_url, monkeypatch):
    monkeypatch.setattr(redisstate, "seen_fingerprint", one_bucket)
    state = RedisState(redis_url, "c")
    keys = [
        "http://a.test/x",
        "http://b.test/x",
        "HEAD http://a.test/x",
        "|http://a.test/x",
        "http://a.test",
        "http://a.test:81/x",
        "https://a.test/x",
        "1/x",
    ]
    for i, key in enumerate(keys):
        assert state.contains_many(keys) == [j < i for j in range(len(keys))]
        assert state.add([StoredRequest(key=key, url="http://a.test/x")]) == [True]
    assert state.contains_many(keys) == [True] * len(keys)


def seen_buckets(r: redis.Redis, name: str = "c") -> list[bytes]:
    pattern = crawl_prefix(name).replace("{", "\\{").replace("}", "\\}") + "s:*"
    return list(r.scan_iter(match=pattern))


def test_seen_set_buckets_stay_compact(redis_url):
    state = RedisState(redis_url, "c")
    long_path = "a-long-path/" * 40  # 480 characters: still 10 bytes a URL
    requests = [req(f"{long_path}{i}.html") for i in range(3000)]
    state.add(requests)
    r = redis.Redis.from_url(redis_url)
    buckets = seen_buckets(r)
    assert buckets
    assert {r.object("encoding", b) for b in buckets} == {b"listpack"}
    # the field is the fingerprint past its bucket: 10 bytes, value ""
    fields = {f for b in buckets for f in r.hkeys(b)}
    assert fields == {redisstate.seen_fingerprint(x.key)[2:] for x in requests}
    for x in requests[:50]:
        fp = redisstate.seen_fingerprint(x.key)
        assert r.hget(crawl_prefix("c") + f"s:{fp[:2].hex()}", fp[2:]) == b""
    assert {len(f) for f in fields} == {10}
    # and nothing in Redis keeps the URL's key once its request is done
    for lease in state.lease(5000, deadline=1e12, strict=False):
        state.ack([lease.ticket])
    assert not any(long_path.encode() in (k or b"") for k in r.keys("*"))
    assert all(x.key in state for x in requests)


def test_another_format_is_refused(redis_url):
    RedisState(redis_url, "c").set_meta("format", "99")
    with pytest.raises(StateError, match="format 99"):
        RedisState(redis_url, "c")


def test_a_state_of_the_exact_key_layout_is_refused_or_started_over(
    redis_url, tmp_path
):
    # format 1 kept the exact keys in the seen-set: never read as format 2
    old = RedisState(redis_url, "c")
    old.add([req("a")])
    old.set_meta("format", "1")
    with pytest.raises(StateError, match=r"format 1, .*format 5.*restart=1"):
        RedisState(redis_url, "c")
    s = Settings()
    s.setmodule(defaults)
    s.set("WEBSPIDER_OUTPUT", str(tmp_path / "out"))
    s.set("WEBSPIDER_START_URLS", ["http://a.test/"])
    s.set("WEBSPIDER_STATE", redis_url)
    s.set("WEBSPIDER_STATE_KEY", "c")
    with pytest.raises(ConfigError, match=r"format 1.*restart=1"):
        check_crawl_state(s)
    s.set("WEBSPIDER_STATE_RESTART", True)
    check_crawl_state(s)
    state, resumed = open_crawl_state(s)
    assert not resumed
    assert len(state) == 0
    assert state.get_meta("format") == "5"
    state.close()


def test_a_worker_joins_with_its_own_mirror_but_not_without_one(redis_url, tmp_path):
    def worker(name, **more):
        s = Settings()
        s.setmodule(defaults)
        s.set("WEBSPIDER_OUTPUT", str(tmp_path / name))
        s.set("WEBSPIDER_START_URLS", ["http://a.test/"])
        s.set("WEBSPIDER_STATE", redis_url)
        s.set("WEBSPIDER_STATE_KEY", "c")
        for setting, value in more.items():
            s.set(setting, value)
        return s

    first, resumed = open_crawl_state(worker("one"))
    assert not resumed
    # each worker writes its own mirror, wherever it is told
    check_crawl_state(worker("two", WEBSPIDER_MIRROR=str(tmp_path / "elsewhere")))
    with pytest.raises(ConfigError, match=r"another mirror \(mirror=1, given 0\)"):
        check_crawl_state(worker("three", WEBSPIDER_MIRROR="0"))
    first.close()


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
            # the first call finds Redis gone, and waits for it (a pipeline
            # too: it must not come back empty-handed)
            assert state.contains_many(["http://a.test/a", "http://a.test/z"]) == [
                True,
                False,
            ]
            state.ack([lease.ticket])
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


def test_a_fingerprint_of_any_bytes_is_read_back(redis_url, monkeypatch):
    # the request's header follows the 12 fingerprint bytes: ":" and "\n"
    # in them must not be read as the header's separators
    monkeypatch.setattr(
        redisstate, "seen_fingerprint", lambda key: b":\n1:2" + key[-1].encode() * 7
    )
    state = RedisState(redis_url, "c")
    assert state.defer([req("x", 3), req("y", 4)]) == [True, True]
    assert state.deferred_round("http://a.test/x") == 0
    assert [(r.key[-1], r.depth) for r in state.iter_deferred()] == [("x", 3), ("y", 4)]
    assert state.add([req("z", 2)]) == [True]
    assert state.next_round() == 2
    leases = state.lease(5, deadline=1e12, strict=False)
    assert sorted((x.request.key[-1], x.request.depth) for x in leases) == [
        ("x", 0),
        ("y", 0),
        ("z", 2),
    ]
    assert {"http://a.test/" + k in state for k in "xyz"} == {True}


def test_a_state_whose_keys_were_deleted_is_found_gone_at_the_commit(redis_url):
    # Redis stayed up (no reconnection to check the format on): the commit
    # reads it, and the crawl is never marked finished on what is left
    state = RedisState(redis_url, "c")
    state.add([req("a")])
    state.commit()
    redis.Redis.from_url(redis_url).flushdb()
    with pytest.raises(StateError, match=r"\(crawl c\): the crawl state is gone"):
        state.commit()
    with pytest.raises(StateError, match="gone"):
        state.set_meta("finished", "1")
    assert state.get_meta("finished") is None
    state.abandon()


def test_a_write_redis_refuses_is_a_refusal_not_damage(redis_url):
    state = RedisState(redis_url, "c")
    client = redis.Redis.from_url(redis_url)
    client.config_set("maxmemory", "1")  # "OOM command not allowed"
    try:
        with pytest.raises(StateError, match="OutOfMemoryError") as raised:
            state.add([req("a")])
    finally:
        client.config_set("maxmemory", "0")
    assert advice_for(raised.value) == "see what Redis answered"
    assert not damaged_state(raised.value)
    state.close()


def test_the_commit_settings_apply_to_a_redis_state(redis_url, tmp_path):
    s = Settings()
    s.setmodule(defaults)
    s.set("WEBSPIDER_OUTPUT", str(tmp_path / "out"))
    s.set("WEBSPIDER_START_URLS", ["http://a.test/"])
    s.set("WEBSPIDER_STATE", redis_url)
    s.set("WEBSPIDER_STATE_COMMIT_INTERVAL", "7.5")
    s.set("WEBSPIDER_STATE_COMMIT_PAGES", "0")  # by time alone
    state, _ = open_crawl_state(s)
    assert (state.commit_interval, state.commit_acks) == (7.5, None)
    assert not state.commit_due()
    state.close()
    s.set("WEBSPIDER_STATE_COMMIT_PAGES", "500")
    state, _ = open_crawl_state(s)
    assert (state.commit_interval, state.commit_acks) == (7.5, 500)
    state.close()


def test_a_key_of_another_kind_is_damage(redis_url):
    state = RedisState(redis_url, "c")
    redis.Redis.from_url(redis_url).set("webspider:{c}:meta", "not a hash")
    with pytest.raises(StateError, match=r"\(crawl c\): WRONGTYPE") as raised:
        state.get_meta("round")
    assert damaged_state(raised.value)
    assert advice_for(raised.value) is None
    state.abandon()
