"""webspider.utils.digests: the page worker's digests, without OpenSSL, are
hashlib's."""

import hashlib

import pytest

from webspider.utils.digests import blake2b, sha256


@pytest.mark.parametrize(
    "data", [b"", b"abc", b"<html>" * 1000, bytes(range(256)) * 300]
)
def test_the_digests_are_hashlibs(data):
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert blake2b(data, digest_size=9).digest() == (
        hashlib.blake2b(data, digest_size=9).digest()
    )
