"""The in-memory records (a crawl without a crawl state) against the same
contract as the crawl state's (tests/test_frontier_state.py runs the
records tests on every CrawlState implementation)."""

from __future__ import annotations

from tests.test_frontier_state import check_flagged_records
from webspider.records import MemoryRecords, MemoryRecordStore, records_or_memory


def test_memory_records_behave_as_the_stored_ones():
    r = MemoryRecords()
    assert r.get("a") is None
    r.put_many([("b\n2", 2), ("b\n1", 1), ("a", 0), ("c", 3)])
    assert list(r.items("b\n")) == [("b\n1", 1), ("b\n2", 2)]
    assert r.count("b") == 2
    assert r.count() == 4
    assert r.put_new("a", 9) is False
    assert r.put_new("d", 9) is True
    assert r.incr("n") == 1
    assert r.incr("n", 2) == 3
    assert r.get_many(["a", "zz"]) == [0, None]
    r.delete(["a", "zz"])
    assert r.get("a") is None
    for key, value in r.items("b"):  # writes while iterating
        r.put(key, value)
        r.put("z" + key, 0)
    r.clear()
    assert r.count() == 0


def test_memory_store_keeps_one_namespace_per_name():
    store = MemoryRecordStore()
    store.records("x").put("k", 1)
    assert store.records("x").get("k") == 1
    assert store.records("y").get("k") is None
    assert records_or_memory(None).records("x").get("k") is None
    assert records_or_memory(store) is store


def test_memory_records_index_one_to_many_keys():
    r = MemoryRecords()
    r.put_many([("a\n2", 2), ("a\n1", 1), ("ab\n1", 3), ("a", 0)])
    r.put_new("a\n3", 3)
    assert list(r.items("a\n")) == [("a\n1", 1), ("a\n2", 2), ("a\n3", 3)]
    assert r.count("a\n") == 3
    assert [k for k, _ in r.items("a")] == ["a", "a\n1", "a\n2", "a\n3", "ab\n1"]
    r.delete_prefix("ab\n")
    assert r.count("ab") == 0
    r.delete(["a\n1", "a\n2", "a\n3", "nothing\n"])
    assert list(r.items("a\n")) == []
    assert r.count("a\n") == 0
    assert r.count() == 1
    r.put_many([("c\n1", 1), ("c\n2", 2), ("cd\n", 3)])
    r.delete_prefix("c\n")
    assert [k for k, _ in r.items()] == ["a", "cd\n"]
    assert r.count("c\n") == 0


def test_memory_records_keep_the_flagged_records_contract():
    check_flagged_records(MemoryRecords())
