from __future__ import annotations

import pytest

from webspider.frontier.deferred import DeferredFrontier, DeferredURL


def entry(key: str, round_: int = 0, depth: int = 3) -> DeferredURL:
    return DeferredURL(key, f"http://x/{key}", depth, "http://x/", round_)


@pytest.fixture
def frontier(tmp_path):
    f = DeferredFrontier(tmp_path / "f.sqlite3")
    yield f
    f.close()


@pytest.mark.parametrize(
    ("added", "new", "length"),
    [
        (["a"], [True], 1),
        (["a", "a"], [True, False], 1),  # deferred from many pages: once
        (["a", "b", "a", "c"], [True, True, False, True], 3),
    ],
)
def test_add_once_per_key(frontier, added, new, length):
    assert [frontier.add(entry(k)) for k in added] == new
    assert len(frontier) == length


@pytest.mark.parametrize(
    ("rounds", "take", "taken", "left"),  # take: (round, limit)
    [
        ([0, 0, 1], (1, 10), ["k0", "k1"], 1),  # round 1's seeds: deferred in 0
        ([0, 0, 1], (2, 10), ["k0", "k1", "k2"], 0),
        ([0, 0, 1], (1, 1), ["k0"], 2),  # a batch at a time, oldest first
        ([1, 1], (1, 10), [], 2),  # deferred in the round being crawled: not yet
        ([], (1, 10), [], 0),
    ],
)
def test_take_seeds_of_a_round(frontier, rounds, take, taken, left):
    take_round, limit = take
    for i, r in enumerate(rounds):
        frontier.add(entry(f"k{i}", r))
    assert [e.key for e in frontier.take(take_round, limit)] == taken
    assert len(frontier) == left
    assert frontier.waiting_before(take_round) == (
        left > 0 and rounds[-left] < take_round
    )


def test_taken_urls_can_be_deferred_again(frontier):
    frontier.add(entry("a", 0))
    assert frontier.take(1, 10) == [entry("a", 0)]
    assert "a" not in frontier
    assert frontier.add(entry("a", 1))
    assert frontier.round_of("a") == 1


def test_iteration_is_oldest_first_and_keeps_rows(frontier):
    for key in ["b", "a", "c"]:
        frontier.add(entry(key))
    assert [e.key for e in frontier] == ["b", "a", "c"]
    assert len(frontier) == 3


def test_rows_and_state_survive_reopening(tmp_path):
    path = tmp_path / "f.sqlite3"
    f = DeferredFrontier(path)
    f.add(entry("a", 2))
    f.set_state("round", 3)
    f.close()
    f = DeferredFrontier(path)
    assert len(f) == 1
    assert f.get_state("round") == 3
    assert f.get_state("missing", 7) == 7
    assert list(f) == [entry("a", 2)]
    f.close()


def test_temporary_frontier_is_deleted_on_close():
    f = DeferredFrontier.temporary()
    f.add(entry("a"))
    path = f.path
    assert path.exists()
    f.close()
    assert not path.exists()
    assert not path.parent.exists()
