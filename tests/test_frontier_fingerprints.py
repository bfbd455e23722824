from __future__ import annotations

from webspider.frontier.fingerprints import fingerprint, fingerprints


def test_fingerprints_are_stable_signed_32_bit():
    assert fingerprint("http://a.test/") == fingerprint("http://a.test/")
    assert fingerprint("http://a.test/") != fingerprint("http://a.test")
    fps = [fingerprint(f"http://a.test/{i}") for i in range(1000)]
    # SQLite stores them in 4 bytes (format 7)
    assert all(-(2**31) <= fp < 2**31 for fp in fps)
    assert any(fp < 0 for fp in fps)
    # stored on disk: the same in every process and on every machine
    assert fingerprint("https://example.org/") == 21190869


def test_batch_fingerprints_equal_single_ones():
    keys = ["https://example.org/", "http://a.test/é", "http://a.test/\udcff", ""]
    assert list(fingerprints(keys)) == [fingerprint(k) for k in keys]
    assert list(fingerprints([])) == []
