"""How long SafeTree.write blocks the caller, by body size.

``python bench/write_latency.py [FOLDER]`` — the mirror writes bodies up to
WEBSPIDER_MIRROR_THREAD_SIZE inline (on the reactor thread) and larger ones
in a thread; this is the measurement behind the default."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from webspider.mirror.safefs import SafeTree


def main() -> None:
    base = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    tree = SafeTree(base / "bench-mirror")
    for size in (4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20):
        data = b"x" * size
        runs = 20 if size <= 1 << 20 else 5
        times = []
        for i in range(runs):
            start = time.perf_counter()
            tree.write(("h", "d", f"f{i}"), data)
            times.append(time.perf_counter() - start)
        times.sort()
        median, worst = times[len(times) // 2] * 1e3, times[-1] * 1e3
        print(f"{size >> 10:>7} KiB  median {median:8.3f} ms  max {worst:8.3f} ms")
    tree.close()


if __name__ == "__main__":
    main()
