"""The CrawlState contract, written once and run against every implementation.

The ``opener`` fixture is parametrised over the implementations: it returns
a function that opens (again) the same state, as a resumed crawl does (for
Redis: another worker joining the same crawl, after the first one left).
Redis runs in a real ``redis-server`` (tests/support/redis_server.py; these
cases are skipped, with the reason, only when it is not installed).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from webspider.frontier.redisstate import RedisState
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import _PLAIN_ORIGIN, Counts, CrawlState, StoredRequest
from webspider.records import Records, flag_text, flagged, flags_of

Opener = Callable[[], CrawlState]


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return lambda: SQLiteState(tmp_path / "state.sqlite3")


def _redis(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    url = request.getfixturevalue("redis_url")
    return lambda: RedisState(url, "contract")


OPENERS: dict[str, Callable[[pytest.FixtureRequest, Path], Opener]] = {
    "sqlite": _sqlite,
    "redis": _redis,
}


@pytest.fixture(params=sorted(OPENERS))
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return OPENERS[request.param](request, tmp_path)


@pytest.fixture
def state(opener: Opener) -> Iterator[CrawlState]:
    s = opener()
    yield s
    s.close()


def req(path: str, depth: int = 0, host: str = "a.test", **kw: object) -> StoredRequest:
    url = f"http://{host}/{path}"
    return StoredRequest(key=url, url=url, depth=depth, **kw)  # type: ignore[arg-type]


def leased_paths(state: CrawlState, n: int = 100, **kw: object) -> list[str]:
    leases = state.lease(n, deadline=1e12, **kw)  # type: ignore[arg-type]
    return [lease.request.url.split("/", 3)[3] for lease in leases]


# -- the seen-set ---------------------------------------------------------------


def test_add_returns_which_were_new(state):
    assert state.add([req("a"), req("b"), req("a")]) == [True, True, False]
    assert state.add([req("b"), req("c")]) == [False, True]
    assert len(state) == 3
    assert "http://a.test/a" in state
    assert "http://a.test/z" not in state
    assert state.contains_many(["http://a.test/c", "http://a.test/d"]) == [True, False]


def test_keys_are_exact(state):
    state.add([req("a")])
    assert "http://a.test/a " not in state
    assert "http://a.test/A" not in state


def test_seen_stays_seen_after_the_request_is_done(state):
    state.add([req("a")])
    [lease] = state.lease(1, deadline=1e12)
    state.ack([lease.ticket])
    assert "http://a.test/a" in state
    assert state.add([req("a")]) == [False]
    assert state.counts() == Counts(queued=0, leased=0, done=1, deferred=0)


# -- the queue: breadth-first per origin -------------------------------------------


def test_depth_order_within_an_origin_fifo_within_a_depth(state):
    state.add([req("d2", 2), req("d1a", 1), req("d0", 0), req("d1b", 1)])
    assert leased_paths(state, strict=False) == ["d0", "d1a", "d1b", "d2"]


def test_higher_priority_first_within_a_depth(state):
    state.add([req("low", 1), req("high", 1, priority=5), req("mid", 1, priority=1)])
    assert leased_paths(state) == ["high", "mid", "low"]


def test_origins_take_turns(state):
    state.add([req(f"a{i}", 0) for i in range(4)])
    state.add([req(f"b{i}", 0, host="b.test") for i in range(4)])
    first = state.lease(4, deadline=1e12)
    hosts = sorted(lease.request.origin for lease in first)
    assert hosts == ["http://a.test"] * 2 + ["http://b.test"] * 2


def test_level_barrier_per_origin(state):
    state.add([req("a0", 0), req("a1", 1), req("b1", 1, host="b.test")])
    [a0] = state.lease(1, deadline=1e12, skip_origins=["http://b.test"])
    # a.test's depth 1 waits for its depth-0 page; b.test's does not
    assert leased_paths(state) == ["b1"]
    assert state.leased_depths("http://a.test") == [0]
    state.ack([a0.ticket])
    assert leased_paths(state) == ["a1"]


def test_no_barrier_when_not_strict(state):
    state.add([req("a0", 0), req("a1", 1)])
    state.lease(1, deadline=1e12)
    assert leased_paths(state, strict=False) == ["a1"]


def test_max_depth_holds_deeper_requests(state):
    state.add([req("a0", 0), req("a1", 1)])
    assert leased_paths(state, strict=False, max_depth=0) == ["a0"]
    assert leased_paths(state, strict=False, max_depth=0) == []


def test_skipped_origins_wait(state):
    state.add([req("a0"), req("b0", host="b.test")])
    assert leased_paths(state, skip_origins=["http://a.test"]) == ["b0"]
    assert leased_paths(state) == ["a0"]


def test_release_puts_back_expire_and_release_all(state):
    state.add([req("a"), req("b"), req("c")])
    leases = state.lease(3, deadline=100.0)
    state.release([leases[0].ticket])
    assert state.counts().queued == 1
    state.renew([leases[1].ticket], 300.0)
    assert state.expire(200.0) == 1  # c's deadline passed, b's was renewed
    assert state.counts() == Counts(queued=2, leased=1, done=0, deferred=0)
    assert state.release_all() == 1
    assert sorted(leased_paths(state)) == ["a", "b", "c"]


def test_request_round_trips_as_data(state):
    state.add([req("page", 0)])
    [page] = state.lease(1, deadline=1e12)
    kept = StoredRequest(
        key="HEAD http://a.test/x",
        url="http://a.test/x#frag",
        depth=1,
        round=2,
        referer="http://a.test/page",  # leased right now
        kind="requisite",
        priority=-3,
        method="HEAD",
        meta={"webspider_check_only": True, "note": "é"},
    )
    odd = StoredRequest(
        key="http://a.test/y",
        url="http://a.test/y",
        depth=1,
        referer="http://elsewhere.test/",  # not a page of this crawl
        kind="sitemap",
    )
    assert state.add([kept, odd]) == [True, True]
    state.ack([page.ticket])
    got = {lease.request.key: lease.request for lease in state.lease(5, deadline=1e12)}
    assert got == {kept.key: kept, odd.key: odd}
    assert StoredRequest.from_json(kept.to_json()) == kept


# -- deferred frontier and rounds -------------------------------------------------


def test_deferred_once_and_not_seen(state):
    assert state.defer([req("x", 3), req("x", 4)]) == [True, False]
    assert "http://a.test/x" not in state
    assert state.deferred_round("http://a.test/x") == 0
    assert state.counts().deferred == 1
    state.add([req("seen")])
    assert state.defer([req("seen", 3)]) == [False]


def test_deferred_url_met_within_the_cap_is_queued(state):
    state.defer([req("x", 3)])
    assert state.add([req("x", 1)]) == [True]
    assert state.deferred_round("http://a.test/x") is None
    assert state.counts() == Counts(queued=1, leased=0, done=0, deferred=0)
    assert list(state.iter_deferred()) == []


def test_next_round_queues_the_deferred_at_depth_zero(state):
    assert state.next_round() == 0
    assert state.round == 0
    state.defer([req("x", 3, referer="http://a.test/p"), req("y", 4)])
    assert [r.depth for r in state.iter_deferred()] == [3, 4]
    assert state.next_round() == 2
    assert state.round == 1
    leases = state.lease(5, deadline=1e12)
    assert [(x.request.url[-1], x.request.depth, x.request.round) for x in leases] == [
        ("x", 0, 1),
        ("y", 0, 1),
    ]
    assert leases[0].request.referer == "http://a.test/p"
    assert state.counts().deferred == 0
    assert "http://a.test/x" in state


# -- metadata, outputs, resuming ----------------------------------------------------


def test_meta_and_offsets(state):
    assert state.get_meta("run") is None
    assert state.get_offset("pages.jsonl") == 0
    state.set_meta("run", "3")
    state.set_offset("pages.jsonl", 1234)
    assert state.get_meta("run") == "3"
    assert state.get_offset("pages.jsonl") == 1234


def test_resume_keeps_everything_committed_and_returns_leases(opener):
    state = opener()
    state.add([req("a0", 0), req("a1", 1), req("b0", 0, host="b.test")])
    state.defer([req("far", 5)])
    leases = state.lease(2, deadline=1e12)
    state.ack([leases[0].ticket])
    state.set_offset("pages.jsonl", 42)
    state.next_round()  # commits
    state.close()
    state = opener()
    try:
        assert state.round == 1
        assert state.get_offset("pages.jsonl") == 42
        # the lease of the dead process is back in the queue
        assert state.counts() == Counts(queued=3, leased=0, done=1, deferred=0)
        assert len(state) == 4
        assert all(k in state for k in ["http://a.test/a0", "http://a.test/far"])
    finally:
        state.close()


# -- records (webspider.records) ------------------------------------------------------


def test_records_put_get_and_absent(state):
    index = state.records("mirror.index")
    index.put("http://a.test/", {"path": "index.html", "size": 3})
    assert index.get("http://a.test/") == {"path": "index.html", "size": 3}
    assert index.get("http://a.test/b") is None
    index.put("http://a.test/", {"path": "other.html"})  # replaced
    assert index.get_many(["http://a.test/b", "http://a.test/"]) == [
        None,
        {"path": "other.html"},
    ]


def test_records_namespaces_are_apart(state):
    state.records("one").put("k", 1)
    state.records("two").put("k", 2)
    assert state.records("one").get("k") == 1
    assert state.records("two").get("k") == 2
    state.records("one").clear()
    assert state.records("one").get("k") is None
    assert state.records("two").get("k") == 2


def test_records_put_new_and_incr(state):
    dupes = state.records("reports.duplicates")
    assert dupes.put_new("hash1", "http://a.test/a") is True
    assert dupes.put_new("hash1", "http://a.test/b") is False
    assert dupes.get("hash1") == "http://a.test/a"
    counters = state.records("bounds.traps")
    assert counters.incr("a.test") == 1
    assert counters.incr("a.test", 5) == 6
    assert counters.get("a.test") == 6


def test_records_put_new_and_incr_many_at_once(state):
    pages = state.records("reports.pages")
    pages.put("b", 1)
    assert pages.put_new_many([("a", 1), ("b", 2), ("c", 3), ("a", 4)]) == [
        True,
        False,
        True,
        False,
    ]
    assert pages.get_many(["a", "b", "c"]) == [1, 1, 3]
    assert pages.put_new_many([]) == []
    totals = state.records("reports.totals")
    totals.incr("pages", 2)
    assert totals.incr_many({"pages": 3, "depth/1": 1}) == {"pages": 5, "depth/1": 1}
    assert totals.incr_many({}) == {}
    assert dict(totals.items()) == {"depth/1": 1, "pages": 5}


#: keys of the namespaces keyed by hashes (the embedded state stores the
#: base64 ones as their bytes, webspider.frontier.sqlitehashed.SQLiteHashed):
#: ids, codes, a content key, and shapes that are not exactly base64
HASHED_KEYS = [
    "AAAAAAAAAAAA",  # an id of zero bytes
    "q+/9Zm3Kx0aB",  # a standard id (+ and /)
    "q-_9",  # a URL-safe code
    "q+/9",  # the same bytes in standard base64: another key
    "AbCdE",  # a 5-character code
    "AbCdEfGh",  # 8
    "AAA=",  # padded: not the bytes' one form
    "AA==",
    "eAAAAAAAAAAAAAAAA",  # a content key: the kind's initial, 16 of base64
    "nq+/9Zm3Kx0aBq+/9",
    "exact:0f",
    "",
    "é-code",
    "ab\ncd",
]


@pytest.mark.parametrize(
    "name",
    [
        "reports.link_states",
        "mirror.paths",
        "urls.codes",
        "reports.pages",
        "reports.content",
    ],
)
def test_records_keyed_by_hashes_keep_every_key_as_it_was(state, name):
    records = state.records(name)
    expected = {key: i for i, key in enumerate(HASHED_KEYS)}
    records.put_many(list(expected.items())[::2])
    for key, value in list(expected.items())[1::2]:
        assert records.put_new(key, value) is True
    assert records.put_new("q-_9", -1) is False
    assert records.get_many([*HASHED_KEYS, "BBBB"]) == [*expected.values(), None]
    assert records.get("AbCdE") == expected["AbCdE"]
    assert dict(records.items()) == expected
    assert records.count() == len(expected)
    state.commit()
    records.delete(["q+/9", "AA=="])
    del expected["q+/9"], expected["AA=="]
    assert records.incr("AbCdEfGh", 2) == expected["AbCdEfGh"] + 2
    expected["AbCdEfGh"] += 2
    assert dict(records.items()) == expected
    assert records.get_many(["q-_9", "q+/9"]) == [expected["q-_9"], None]
    records.clear()
    assert records.count() == 0
    assert records.get("q-_9") is None


def test_records_items_by_prefix_in_key_order(state):
    broken = state.records("reports.broken")
    broken.put_many(
        [
            ("http://a.test/x\nhttp://a.test/p2", 2),
            ("http://a.test/x\nhttp://a.test/p1", 1),
            ("http://a.test/xy\nhttp://a.test/p3", 3),
            ("http://a.test/w\nhttp://a.test/p0", 0),
        ]
    )
    assert list(broken.items("http://a.test/x\n")) == [
        ("http://a.test/x\nhttp://a.test/p1", 1),
        ("http://a.test/x\nhttp://a.test/p2", 2),
    ]
    assert broken.count("http://a.test/x") == 3
    assert broken.count() == 4
    assert [k for k, _ in broken.items()] == sorted(k for k, _ in broken.items())
    broken.delete(["http://a.test/w\nhttp://a.test/p0"])
    assert broken.count() == 3


def test_records_delete_a_prefix_and_nothing_else(state):
    ledger = state.records("reports.referrers")
    ledger.put_many(
        [
            ("http://a.test/x\nhttp://a.test/p1", 1),
            ("http://a.test/x\nhttp://a.test/p2", [2]),
            ("http://a.test/x", 0),  # the key without its group's separator
            ("http://a.test/xy\nhttp://a.test/p3", 3),
            ("http://a.test/w\nhttp://a.test/p0", 0),
            ("http://a.test/x\u00e9\nhttp://a.test/p4", 4),
        ]
    )
    state.records("other").put("http://a.test/x\nhttp://a.test/p1", 1)
    ledger.delete_prefix("http://a.test/x\n")
    assert [k for k, _ in ledger.items()] == [
        "http://a.test/w\nhttp://a.test/p0",
        "http://a.test/x",
        "http://a.test/xy\nhttp://a.test/p3",
        "http://a.test/x\u00e9\nhttp://a.test/p4",
    ]
    assert ledger.count("http://a.test/x\n") == 0
    ledger.delete_prefix("http://nothing.test/\n")
    assert ledger.count() == 4
    assert state.records("other").count() == 1
    many = state.records("many")
    many.put_many((f"g\n{i:05d}", i) for i in range(2500))
    many.delete_prefix("g\n")
    assert many.count() == 0


def test_records_stream_many_and_allow_writes_while_iterating(state):
    many = state.records("many")
    many.put_many((f"k{i:05d}", i) for i in range(2000))
    seen = []
    for key, value in many.items("k"):
        seen.append(value)
        many.put(key, value + 1)  # rewriting what was read
        many.put("z" + key, 0)  # and adding after the end
    assert seen == list(range(2000))
    assert many.count("k") == 2000
    assert many.get("k01999") == 2000


def test_records_keep_unicode_and_plain_data(state):
    r = state.records("r")
    value = {"list": [1, "é", None, True], "nested": {"a": 1.5}}
    r.put("http://ü.test/ä?q=ß", value)
    assert r.get("http://ü.test/ä?q=ß") == value


def test_records_keep_each_scalar_and_its_type(opener):
    # the embedded state stores integers as SQLite integers (0 and 1 cost
    # no byte), strings as BLOBs, flat lists of integers, strings and Nones
    # packed (a digest's base64 as its bytes), the rest as JSON: each comes
    # back as given
    digest = "eb5WePbF12d_fxGzKZyY8hLueo77rrb_yaZxKClbSsA"
    values = [0, 1, -1, 7, 2**62, 2**70, -(2**70), True, False, 1.0, "1", "", [0]]
    values += [
        [digest, 3832, 1, 9, 1796317053, 0, None, "é", -(2**63), ""],
        [],
        [digest[:-1], digest + "=", "AAAAAAAAAAAAAAAA", "x" * 300],
        [1, True],  # a bool in a list: JSON, and a bool again
        [1.0, [2]],
        [2**63],
    ]
    state = opener()
    r = state.records("r")
    r.put_many([(str(i), v) for i, v in enumerate(values)])
    state.close()
    again = opener()
    try:
        got = again.records("r").get_many([str(i) for i in range(len(values))])
        assert got == values
        assert [type(v) for v in got] == [type(v) for v in values]
        assert again.records("r").get("0") == 0
        assert again.records("r").incr("1", 2) == 3
    finally:
        again.close()


def test_records_survive_a_resume(opener):
    state = opener()
    state.records("r").put("kept", [1, 2])
    state.records("r").incr("n", 3)
    state.close()
    again = opener()
    try:
        assert again.records("r").get("kept") == [1, 2]
        assert again.records("r").incr("n") == 4
    finally:
        again.close()


def check_flagged_records(r: Records) -> None:
    """The flagged-records contract (webspider.records) on namespace ``r``
    (also run on MemoryRecords by tests/test_records.py)."""
    mirror, reports = 1, 2
    r.flag_many(
        [
            ("t\np1", mirror, None),
            ("t\np1", reports, "home"),
            ("t\np2", reports, '\u00e9 "q" \\ /'),
            ("t\np3", mirror, None),
            ("tu\np1", mirror, None),
            ("u\np1", reports, ""),
        ]
    )
    assert r.get("t\np1") == flagged(mirror | reports, "home")
    assert flags_of(r.get("t\np1")) == 3
    assert flag_text(r.get("t\np2")) == '\u00e9 "q" \\ /'
    assert r.get("t\np3") == flagged(mirror)
    assert r.get("u\np1") == flagged(reports, "")
    # a text with NUL (the reports' "\0<tag>\0<text>"), set on a row that has
    # one, and kept when another bit is set or cleared
    r.flag_many([("t\np3", reports, "\0img\0logo"), ("t\np3", 4, None)])
    r.unflag(["t\np3"], 4)
    assert r.get("t\np3") == flagged(mirror | reports, "\0img\0logo")
    r.unflag(["t\np3"], reports)
    # idempotent: a page read again sets the same bits; no text keeps the old
    r.flag_many([("t\np1", mirror, None), ("t\np1", reports, "home")])
    r.flag_many([("t\np2", mirror, None)])
    assert r.get("t\np1") == flagged(3, "home")
    assert r.get("t\np2") == flagged(3, '\u00e9 "q" \\ /')
    # one feature's part cleared: the other's stays, with its text
    r.unflag_prefix("t\n", mirror)
    assert list(r.items("t\n")) == [
        ("t\np1", flagged(reports, "home")),
        ("t\np2", flagged(reports, '\u00e9 "q" \\ /')),
    ]
    assert r.get("t\np3") is None  # no flag left: deleted
    assert r.get("tu\np1") == flagged(mirror)  # not in the prefix
    r.unflag_prefix("t\n", mirror)  # again: nothing changes
    assert r.count("t\n") == 2
    r.unflag(["t\np1", "nothing"], reports)
    assert r.get("t\np1") is None
    r.flag_many([("t\np2", mirror, None)])
    r.unflag(["t\np2"], reports)
    assert r.get("t\np2") == flagged(mirror, '\u00e9 "q" \\ /')
    r.unflag_prefix("", mirror)
    assert list(r.items()) == [("u\np1", flagged(reports, ""))]
    # several prefixes in one call: each group left as unflag_prefix leaves it
    r.flag_many(
        [
            ("a\n1", mirror, None),
            ("a\n2", reports, "x"),
            ("ab\n1", mirror | reports, "y"),
            ("b\n1", mirror, None),
            ("c\n1", mirror, None),
        ]
    )
    r.unflag_prefixes(["a\n", "ab\n", "b\n"], mirror)
    r.unflag_prefixes([], mirror)
    assert list(r.items()) == [
        ("a\n2", flagged(reports, "x")),
        ("ab\n1", flagged(reports, "y")),
        ("c\n1", flagged(mirror)),
        ("u\np1", flagged(reports, "")),
    ]
    r.unflag_prefixes(["a\n", "ab\n", "c\n"], mirror | reports)
    assert list(r.items()) == [("u\np1", flagged(reports, ""))]
    # a range cleared between two features' flags: what each saw at once
    r.flag_many([("v\np1", reports, "kept"), ("w\np1", reports, "w")])
    r.flag_many([("v\np1", mirror, None), ("w\np1", mirror, None)])
    r.unflag_prefix("v\n", reports)
    assert r.get("v\np1") == flagged(mirror, "kept")
    r.unflag_prefixes(["w\n"], mirror)
    assert r.get("w\np1") == flagged(reports, "w")
    r.unflag_prefixes(["v\n", "w\n"], mirror | reports)
    assert list(r.items()) == [("u\np1", flagged(reports, ""))]
    with pytest.raises(ValueError):
        r.unflag_prefixes(["u\n"], 0)
    # many rows in one call (past a round trip's batch)
    r.flag_many(
        (f"g\n{i:05d}", mirror if i % 2 else reports, None) for i in range(2500)
    )
    r.flag_many((f"g\n{i:05d}", mirror, None) for i in range(0, 2500, 4))
    r.unflag_prefix("g\n", reports)
    assert r.count("g\n") == 1250 + 625
    r.unflag([f"g\n{i:05d}" for i in range(2500)], mirror)
    assert r.count("g\n") == 0
    with pytest.raises(ValueError):
        r.flag_many([("k", 0, None)])


@pytest.mark.parametrize("name", ["links.waiting", "some.flags"])
def test_records_flags_shared_by_two_features(opener, name):
    # links.waiting has a table of its own on SQLite (SQLiteWaiting)
    state = opener()
    try:
        check_flagged_records(state.records(name))
    finally:
        state.close()


def test_sqlite_flags_of_two_features_are_written_once_with_the_commit(
    tmp_path: Path,
) -> None:
    """The embedded state holds flag_many's rows until it commits: a row
    two features flag (a link waiting in the report and the mirror) is one
    statement, and it is in the committed file."""
    state = SQLiteState(tmp_path / "s.sqlite3")
    try:
        waiting = state.records("links.waiting")
        rows = [(f"t{i}\np", 2, f"text {i}") for i in range(50)]
        statements: list[str] = []
        state._db.set_trace_callback(statements.append)
        waiting.flag_many(rows)
        waiting.flag_many([(key, 1, None) for key, _, _ in rows])
        assert statements == []  # held
        state.commit()
        state._db.set_trace_callback(None)
        # a link appended to its target's chunk (SQLiteWaiting), once with
        # both bits
        inserts = [s for s in statements if s.startswith("INSERT INTO waiting")]
        assert len(inserts) == 50
        other = sqlite3.connect(tmp_path / "s.sqlite3")  # what is on disk
        try:
            (count,) = other.execute("SELECT COUNT(*) FROM waiting").fetchone()
        finally:
            other.close()
        assert count == 50
        assert waiting.get("t7\np") == flagged(3, "text 7")
    finally:
        state.close()


def test_records_flags_survive_a_resume(opener):
    state = opener()
    state.records("w").flag_many([("k", 2, "text"), ("k", 1, None), ("j", 1, None)])
    state.records("w").unflag(["j"], 1)
    state.close()
    again = opener()
    try:
        assert again.records("w").get("k") == flagged(3, "text")
        assert again.records("w").get("j") is None
    finally:
        again.close()


def test_a_stored_requests_origin_is_what_urlsplit_reads():
    # StoredRequest.origin reads most URLs' origin without urlsplit: the same
    # string for every URL, odd ones included
    def slow(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}".lower()

    rnd = random.Random(17)
    heads = ["http://", "https://", "HTTP://", "http:/", "http:", " http://", "ftp://"]
    heads += ["\thttp://", "ht\ttp://", "http:///", "https://"]
    chars = [*"aZ09.:-@[]/?#%_~\\ \t\né", "xn--", ":8080", "..", "//"]
    fast = 0
    for _ in range(20000):
        pool = chars[:5] if rnd.random() < 0.5 else chars
        rest = "".join(rnd.choice(pool) for _ in range(rnd.randint(0, 12)))
        url = rnd.choice(heads) + rest
        try:
            expected = slow(url)
        except ValueError:  # urlsplit refuses it: so does origin
            with pytest.raises(ValueError):
                StoredRequest(key=url, url=url).origin  # noqa: B018
            continue
        assert StoredRequest(key=url, url=url).origin == expected, url
        fast += _PLAIN_ORIGIN.match(url) is not None
    assert fast > 3000
