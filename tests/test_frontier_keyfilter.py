"""The in-memory filter in front of the embedded crawl state: a key it
reports absent was never added, whatever the keys, their tags and the
table's growth."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webspider.frontier import keyfilter
from webspider.frontier.keyfilter import KeyFilter


def keys(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"http://a.test/{rng.random()}/{i}" for i in range(n)]


def test_added_keys_are_found_through_growth_and_bytes_per_key_stay_at_most_12():
    added = keys(50_000)
    f = KeyFilter()
    for i, key in enumerate(added):
        f.add(key)
        if i > 2000:
            assert f.nbytes / len(f) <= 12.01
    # no key added is ever reported absent (copies: a link is a new str)
    assert f.maybe_many([k[:-1] + k[-1] for k in added]) == [True] * len(added)
    assert all(k in f for k in added)
    assert len(f) <= len(added)
    assert len(f) > len(added) * 0.99  # tags are 32 bits: a few shared
    # keys not added: "maybe" only for a shared tag, about n / 2**32 a key
    absent = keys(20_000, seed=1)
    assert sum(f.maybe_many(absent)) < 5
    assert 3 not in f


def test_maybe_many_equals_single_checks():
    f = KeyFilter()
    added = keys(3000)
    for key in added[::2]:
        f.add(key)
    assert f.maybe_many(added) == [key in f for key in added]
    assert f.maybe_many(added)[::2] == [True] * 1500
    assert f.maybe_many([]) == []


def crowded(n: int, size: int, home: int) -> list[str]:
    """``n`` strings whose tags (distinct) all have ``home`` slot in a table
    of ``size`` slots."""
    found: list[str] = []
    tags = set()
    i = 0
    while len(found) < n:
        key = f"k{i}"
        i += 1
        tag = hash(key) & 0xFFFFFFFF or 1
        if tag % size == home and tag not in tags:
            tags.add(tag)
            found.append(key)
    return found


@pytest.mark.parametrize("home", [5, 1023])  # 1023: probes wrap around
def test_a_crowded_slot_overflows_into_the_next_ones(home):
    f = KeyFilter()
    assert f.nbytes == 4 * 1024  # the smallest table
    values = crowded(60, 1024, home)
    for key in values[:40]:
        f.add(key)
    assert len(f) == 40
    assert f.maybe_many(values[:40]) == [True] * 40
    # same home slot, not added: found absent only at the end of the run
    assert f.maybe_many(values[40:]) == [False] * 20
    assert [k in f for k in values[40:]] == [False] * 20


def test_a_shared_tag_is_a_maybe_never_a_miss(monkeypatch):
    # every key hashed alike: all "maybe" once one was added
    f = KeyFilter()
    assert f.maybe_many(["a", "b"]) == [False, False]
    monkeypatch.setattr(keyfilter, "hash", lambda key: 7, raising=False)
    f.add("a")
    assert f.maybe_many(["a", "b"]) == [True, True]
    assert len(f) == 1


@pytest.mark.parametrize("tag_of_hash", [0, 1, 2**32, -1, -(2**63), 2**63 - 1])
def test_any_hash_value(monkeypatch, tag_of_hash):
    monkeypatch.setattr(keyfilter, "hash", lambda key: tag_of_hash, raising=False)
    f = KeyFilter()
    assert "x" not in f
    f.add("x")
    assert "x" in f
    assert f.maybe_many(["x"]) == [True]


@given(st.lists(st.text(max_size=20), max_size=300), st.lists(st.text(max_size=20)))
def test_never_a_false_miss(added, others):
    f = KeyFilter()
    for key in added:
        f.add(key)
    assert f.maybe_many(added + others)[: len(added)] == [True] * len(added)
    for key in others:
        if key not in added:
            continue
        assert key in f
