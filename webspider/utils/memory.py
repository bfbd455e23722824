"""Freed memory given back to the system (glibc's ``malloc_trim``).

Python keeps small objects in its own arenas; larger blocks (over 512 bytes:
page bodies, the tables of dicts and sets, the code read at import) come from
the C library's heap, and glibc keeps the pages freed in the middle of its
heap resident: ~1.8 MB after the page worker's imports, and more as a crawl
goes (bench/README.md, "Peak RSS against plain Scrapy's, per process").
``malloc_trim(0)`` gives back every whole free page; when nothing is free it
costs about a microsecond. Where the C library has no ``malloc_trim`` (musl,
macOS), this does nothing.

Pure: standard library only.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> None:
    """Give the C library's free pages back to the system."""
    if _TRIM is not None:
        _TRIM(0)
