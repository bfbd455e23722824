from __future__ import annotations

import random
from array import array

import pytest

from webspider.frontier.fingerprints import FingerprintTable, fingerprint, fingerprints


def test_fingerprints_are_stable_signed_64_bit():
    assert fingerprint("http://a.test/") == fingerprint("http://a.test/")
    assert fingerprint("http://a.test/") != fingerprint("http://a.test")
    fps = [fingerprint(f"http://a.test/{i}") for i in range(1000)]
    assert all(-(2**63) <= fp < 2**63 for fp in fps)
    assert any(fp < 0 for fp in fps)
    # stored on disk: the same in every process and on every machine
    assert fingerprint("https://example.org/") == -5134289984887863442


@pytest.mark.parametrize("special", [0, 1, -1, 2**63 - 1, -(2**63)])
def test_any_64_bit_value(special):
    table = FingerprintTable()
    assert special not in table
    assert table.add(special)
    assert special in table
    assert not table.add(special)


def test_growth_keeps_every_member_and_bytes_per_url_at_most_16():
    rng = random.Random(1)
    values = [rng.randrange(-(2**63), 2**63) for _ in range(50_000)]
    table = FingerprintTable()
    for i, v in enumerate(values):
        assert table.add(v)
        if i > 2000:
            assert table.nbytes / len(table) <= 16.1
    assert len(table) == len(values)
    assert all(v in table for v in values)
    absent = [rng.randrange(-(2**63), 2**63) for _ in range(1000)]
    assert sum(v in table for v in absent) == 0
    assert "a string" not in table


def test_batch_fingerprints_equal_single_ones():
    keys = ["https://example.org/", "http://a.test/é", "http://a.test/\udcff", ""]
    assert list(fingerprints(keys)) == [fingerprint(k) for k in keys]
    assert list(fingerprints([])) == []


def crowded(n: int, *, buckets: int = 1024, bucket: int = 5) -> list[int]:
    """``n`` values of one home slot of a new table (positive and negative
    small values)."""
    values = [bucket + k * buckets for k in range(n // 2)]
    values += [-(buckets - bucket) - k * buckets for k in range(n - n // 2)]
    assert len({v % buckets for v in values}) == 1
    return values


@pytest.mark.parametrize("bucket", [5, 1023])  # 1023: probes wrap around
def test_a_crowded_slot_overflows_into_the_next_ones(bucket):
    table = FingerprintTable()
    values = crowded(40, bucket=bucket)
    for v in values:
        assert table.add(v)
    assert len(table) == 40
    assert all(v in table for v in values)
    assert table.contains_many(values) == [True] * 40
    # same home slot, not added: found absent only at the end of the run
    others = [v + 1024 * 1000 for v in values[:3]] + [
        v - 1024 * 1000 for v in values[-3:]
    ]
    assert [v in table for v in others] == [False] * 6
    assert table.contains_many(others) == [False] * 6
    assert not any(table.add(v) for v in values)


def test_contains_many_equals_single_checks_through_growth():
    rng = random.Random(2)
    table = FingerprintTable()
    values = [rng.randrange(-(2**63), 2**63) for _ in range(20_000)] + crowded(30)
    for v in values:
        table.add(v)
    probe = values[::7] + [rng.randrange(-(2**63), 2**63) for _ in range(2000)]
    probe += [v + 1024 for v in crowded(30)]
    assert table.contains_many(probe) == [v in table for v in probe]
    assert table.contains_many(array("q", values)) == [True] * len(values)
