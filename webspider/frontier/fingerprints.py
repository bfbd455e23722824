"""32-bit URL fingerprints: where the embedded crawl state finds a URL.

The crawl state finds every URL's row by a 32-bit fingerprint of its
canonical key (the first 4 bytes of BLAKE2b: stable across processes and
machines, unlike ``hash()``, and as fast as any hash in the standard
library), indexed in the file (webspider.frontier.sqlite); the row keeps
the exact key, which is compared, so keys that share a fingerprint are
told apart. 32 bits and not 64 (format 7): SQLite stores the number in 4
bytes instead of 8, in the row and in its index, 8 bytes a URL seen; a
look-up meets another key's row with a probability of n/2³² (n URLs seen:
1 in 430 at ten million), and reads that row's key for nothing then.
What answers "never seen" in memory is webspider.frontier.keyfilter.

A batch of keys is fingerprinted at once (``fingerprints``): the state
confirms a page's possibly seen links in one query.

Pure: standard library only.
"""

from __future__ import annotations

import sys
from array import array
from hashlib import blake2b
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

#: array('i') holds native-endian integers, fingerprint() reads little-endian
_SWAP = sys.byteorder != "little"
#: bytes of a fingerprint
_SIZE = 4
#: the array type of 4-byte signed integers ('i' is 4 bytes on every
#: platform CPython runs on; checked on import)
_TYPE = "i"
assert array(_TYPE).itemsize == _SIZE


def fingerprint(key: str) -> int:
    """The signed 32-bit fingerprint of ``key`` (SQLite stores it in 4 bytes)."""
    digest = blake2b(key.encode("utf-8", "surrogatepass"), digest_size=_SIZE).digest()
    return int.from_bytes(digest, "little", signed=True)


def fingerprints(keys: Iterable[str]) -> array[int]:
    """``[fingerprint(key) for key in keys]``, a third cheaper: the digests
    are joined and read as integers in one step."""
    fps = array(
        _TYPE,
        b"".join(
            [
                blake2b(k.encode("utf-8", "surrogatepass"), digest_size=_SIZE).digest()
                for k in keys
            ]
        ),
    )
    if _SWAP:
        fps.byteswap()
    return fps
