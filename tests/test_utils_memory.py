"""webspider.utils.memory: freed memory given back to the system."""

import platform

import pytest

from webspider.utils import memory


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_glibc_gets_the_freed_memory_back():
    assert memory._TRIM is not None
    blocks = [bytes(4096) for _ in range(1000)]  # from the C library's heap
    del blocks
    assert memory.release_free_memory() is None
