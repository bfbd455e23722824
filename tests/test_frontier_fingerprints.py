from __future__ import annotations

import random

import pytest

from webspider.frontier.fingerprints import FingerprintTable, fingerprint


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
