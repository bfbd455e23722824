"""The SeenSet contract (webspider.frontier.seen), run against every implementation.

An implementation joins by adding a factory to IMPLEMENTATIONS: it takes a
directory of its own (under pytest's tmp_path, for a store's files) and
returns an empty SeenSet. Every test below then runs against it too.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webspider.frontier.seen import MemorySeenSet, SeenSet

IMPLEMENTATIONS = [
    pytest.param(lambda directory: MemorySeenSet(), id="memory"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def new_seen(request, tmp_path) -> Callable[[], SeenSet]:
    """Makes a fresh, empty seen-set of the implementation under test."""
    counter = itertools.count()
    factory: Callable[[Path], SeenSet] = request.param

    def make() -> SeenSet:
        directory = tmp_path / f"seen-{next(counter)}"
        directory.mkdir()
        return factory(directory)

    return make


def test_empty(new_seen):
    seen = new_seen()
    assert len(seen) == 0
    assert "https://a.test/" not in seen
    assert len(seen.view()) == 0
    assert "https://a.test/" not in seen.view()


def test_the_view_answers_for_the_same_keys_as_they_are_added(new_seen):
    seen = new_seen()
    seen.add("https://a.test/1")
    view = seen.view()  # taken once, as the spider does
    assert "https://a.test/1" in view
    assert "https://a.test/2" not in view
    seen.add("https://a.test/2")
    seen.add("https://a.test/2")
    assert "https://a.test/2" in view
    assert len(view) == 2


def test_add_says_whether_the_key_was_new(new_seen):
    seen = new_seen()
    assert seen.add("https://a.test/") is True
    assert "https://a.test/" in seen
    assert len(seen) == 1
    assert seen.add("https://a.test/") is False
    assert len(seen) == 1


def test_keys_are_compared_exactly(new_seen):
    # canonicalising is the caller's business: the set keeps what it is given
    seen = new_seen()
    keys = [
        "https://a.test/x",
        "https://a.test/x/",
        "https://a.test/X",
        "HTTPS://a.test/x",
        "https://a.test/x#f",
        "https://a.test/x?",
        "https://a.test/x2",
        "https://a.test/",
    ]
    for key in keys:
        assert seen.add(key) is True
    assert len(seen) == len(keys)
    assert all(key in seen for key in keys)
    assert "https://a.test" not in seen
    assert "https://a.test/x " not in seen


@pytest.mark.parametrize(
    "key",
    [
        "HEAD https://a.test/x",  # the dupefilter's keys of other methods
        "POST https://a.test/x 356a192b7913b04c54574d18c28d46e6395428ab",
        "https://a.test/%C3%BC",
        "https://ü.test/ü?q=ü",  # not canonical, still a key
        "https://a.test/line\nbreak",
        "https://a.test/" + "p" * 10_000,
        "",
    ],
)
def test_any_string_is_a_key(new_seen, key):
    seen = new_seen()
    assert key not in seen
    assert seen.add(key) is True
    assert key in seen
    assert seen.add(key) is False
    assert len(seen) == 1


def test_no_false_positives_and_an_exact_count(new_seen):
    # a compact set must stay exact: a URL reported seen is never fetched
    seen = new_seen()
    added = [f"https://a.test/page/{i}" for i in range(20_000)]
    assert all(seen.add(key) for key in added)
    assert not any(seen.add(key) for key in added[::7])
    assert len(seen) == len(added)
    assert all(key in seen for key in added)
    assert all(key in seen.view() for key in added)
    assert not any(f"https://a.test/page/{i}" in seen for i in range(20_000, 40_000))
    assert not any(f"https://b.test/page/{i}" in seen for i in range(20_000))


# Keys a store can hold as text: UTF-8 encodable, no NUL (a canonical URL
# has neither a lone surrogate nor a NUL: both are percent-encoded).
keys = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30
) | st.sampled_from(["https://a.test/", "https://a.test/x", "HEAD https://a.test/"])


# The fixture is a factory: every example makes its own empty set with it.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=st.lists(st.tuples(st.booleans(), keys), max_size=60))
def test_behaves_as_a_set(new_seen, operations):
    seen = new_seen()
    view = seen.view()
    model: set[str] = set()
    for add, key in operations:
        if add:
            assert seen.add(key) is (key not in model)
            model.add(key)
        else:
            assert (key in seen) is (key in model)
            assert (key in view) is (key in model)
        assert len(seen) == len(model)
        assert len(view) == len(model)
