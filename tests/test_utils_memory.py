"""webspider.utils.memory: freed memory given back to the system."""

import platform
import subprocess
import sys

import pytest

#: frees 80 MB of 4 KB blocks from the C library's heap while a block
#: allocated after them stays (so glibc cannot shrink its heap's top), then
#: prints the process's anonymous memory before and after `release`
SCRIPT = """
import sys
from webspider.utils.memory import release_free_memory

def rss_anon():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) // 1024

blocks = [bytearray(4096) for _ in range(20_000)]
kept = bytearray(4096)
del blocks
before = rss_anon()
if sys.argv[1] == "release":
    release_free_memory()
print(before, rss_anon())
"""


def anon_mb(mode: str) -> tuple[int, int]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        capture_output=True,
        check=True,
        timeout=60,
    )
    before, after = map(int, done.stdout.split())
    return before, after


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_glibc_gets_the_freed_memory_back():
    before, after = anon_mb("keep")
    assert after > before - 10  # freed, yet resident
    assert before > 70
    before, after = anon_mb("release")
    assert after < before - 60
