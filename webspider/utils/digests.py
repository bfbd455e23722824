"""SHA-256 and BLAKE2b without OpenSSL.

Importing hashlib loads OpenSSL's libcrypto: ~3.4 MB of resident memory in
each process that does. The crawl's process has it anyway (Scrapy, Twisted's
TLS); the page worker needs only these two digests (a page's
``content_hash``, the URL codes), so it takes them from Python's own
modules, as hashlib itself does when OpenSSL is missing. BLAKE2b is
hashlib's very function (it never uses OpenSSL's); Python's SHA-256 is
slower than OpenSSL's (~13 µs for a 3 KB page against ~2.5 µs), on the
worker's core, not the crawl's (bench/README.md, "Peak RSS against plain
Scrapy's, per process"). The digests are the same.
"""

from __future__ import annotations

from _blake2 import blake2b

try:
    from _sha2 import sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # up to 3.11
    except ImportError:  # a Python built without it
        from hashlib import sha256

__all__ = ["blake2b", "sha256"]
