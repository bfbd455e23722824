"""64-bit URL fingerprints: where the embedded crawl state stores a URL.

The crawl state keys every URL on a 64-bit fingerprint of its canonical key
(the first 8 bytes of BLAKE2b: stable across processes and machines, unlike
``hash()``, and as fast as any hash in the standard library): its row id
in the file (webspider.frontier.sqlite), which also keeps the exact key.
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

#: array('q') holds native-endian integers, fingerprint() reads little-endian
_SWAP = sys.byteorder != "little"


def fingerprint(key: str) -> int:
    """The signed 64-bit fingerprint of ``key`` (SQLite's INTEGER range)."""
    digest = blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def fingerprints(keys: Iterable[str]) -> array[int]:
    """``[fingerprint(key) for key in keys]``, a third cheaper: the digests
    are joined and read as integers in one step."""
    fps = array(
        "q",
        b"".join(
            [
                blake2b(k.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                for k in keys
            ]
        ),
    )
    if _SWAP:
        fps.byteswap()
    return fps
