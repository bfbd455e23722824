"""SHA-256 and BLAKE2b without OpenSSL, for the page worker.

Importing hashlib loads OpenSSL's libcrypto: ~3.4 MB of resident memory in
each process that does. The crawl's process has it anyway (Scrapy, Twisted's
TLS); the page worker needs only two digests (a page's ``content_hash``, the
URL codes) and takes them from Python's own modules, as hashlib itself does
when OpenSSL is missing (bench/README.md, "Peak RSS against plain Scrapy's,
per process"). BLAKE2b is hashlib's very function (it never uses OpenSSL's).
Python's SHA-256 takes ~4 ns a byte more than OpenSSL's (13 µs for a 3 KB
page against 2.5 µs), so ``sha256_hex`` uses it for small data only: the
first data of OPENSSL_FROM bytes or more loads OpenSSL's for the rest of the
process's life (a site of larger pages pays the memory, not the time). The
digests are the same either way.
"""

from __future__ import annotations

from _blake2 import blake2b
from typing import TYPE_CHECKING, Any

try:
    from _sha2 import sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # up to 3.11
    except ImportError:  # a Python built without it
        from hashlib import sha256

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["OPENSSL_FROM", "blake2b", "sha256", "sha256_hex"]

#: data of this many bytes or more is hashed by OpenSSL (hashlib), loaded then
OPENSSL_FROM = 16 * 1024


def _openssl_sha256() -> Callable[[bytes], Any]:
    from hashlib import sha256 as openssl  # noqa: PLC0415 (see the docstring)

    return openssl


class _Sha256Hex:
    def __init__(self) -> None:
        self.openssl: Callable[[bytes], Any] | None = None

    def __call__(self, data: bytes) -> str:
        if self.openssl is None:
            if len(data) < OPENSSL_FROM:
                digest: str = sha256(data).hexdigest()
                return digest
            self.openssl = _openssl_sha256()
        digest = self.openssl(data).hexdigest()
        return digest


#: the SHA-256 of bytes, in hex: Python's for small data until some large
#: data loaded OpenSSL's
sha256_hex = _Sha256Hex()
