"""webspider.utils.digests: the page worker's digests, without OpenSSL for
small data, are hashlib's."""

import hashlib
import subprocess
import sys

import pytest

from webspider.utils.digests import OPENSSL_FROM, blake2b, sha256, sha256_hex


@pytest.mark.parametrize(
    "data", [b"", b"abc", b"<html>" * 1000, bytes(range(256)) * 300]
)
def test_the_digests_are_hashlibs(data):
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()
    assert blake2b(data, digest_size=9).digest() == (
        hashlib.blake2b(data, digest_size=9).digest()
    )


def test_openssl_is_loaded_by_the_first_large_data_only():
    code = (
        "import sys\n"
        "from webspider.utils.digests import OPENSSL_FROM, sha256_hex\n"
        "sha256_hex(b'x' * (OPENSSL_FROM - 1))\n"
        "print('_hashlib' in sys.modules)\n"
        "print(sha256_hex(b'x' * OPENSSL_FROM))\n"
        "print('_hashlib' in sys.modules, sha256_hex(b'abc'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, timeout=60
    )
    assert done.stdout.decode().split() == [
        "False",
        hashlib.sha256(b"x" * OPENSSL_FROM).hexdigest(),
        "True",
        hashlib.sha256(b"abc").hexdigest(),
    ]
