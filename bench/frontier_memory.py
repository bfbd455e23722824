"""Benchmark (not a test): memory of the deferred frontier as it grows.

    PYTHONPATH=. python bench/frontier_memory.py [--sizes 1000,1000000]

For each size N, a fresh process defers N distinct URLs into the crawl
state (webspider.frontier.sqlite.SQLiteState, a temporary file as a crawl
without JOBDIR uses), then starts the next round and leases them all back 16
at a time. It reports the process's resident memory (VmRSS) after deferring, its
peak (VmHWM) over the whole run, the file size, and the time taken; and, for
contrast, the RSS of holding the same N entries as Python tuples in a dict.
Memory should be flat in N for the frontier and linear for the dict.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rss_kib(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def url(i: int) -> str:
    return f"https://www.example.org/section-{i % 97}/article/{i}?page={i % 7}"


def child(n: int, mode: str) -> dict[str, float]:
    # imported by the child process only: the parent measures nothing
    from webspider.frontier.sqlite import SQLiteState  # noqa: PLC0415
    from webspider.frontier.state import StoredRequest  # noqa: PLC0415

    base = rss_kib()
    started = time.perf_counter()
    if mode == "dict":
        held = {url(i): (url(i), 3, url(i // 10), 0) for i in range(n)}
        after = rss_kib()
        return {
            "n": n,
            "base_mib": base / 1024,
            "after_mib": after / 1024,
            "peak_mib": rss_kib("VmHWM") / 1024,
            "entries": len(held),
        }
    tmp = tempfile.TemporaryDirectory(prefix="webspider-frontier-")
    frontier = SQLiteState(Path(tmp.name) / "state.sqlite3")
    for start in range(0, n, 1000):
        frontier.defer(
            [
                StoredRequest(url(i), url(i), depth=3, referer=url(i // 10))
                for i in range(start, min(start + 1000, n))
            ]
        )
        frontier.maybe_commit()
    frontier.commit()
    deferred_s = time.perf_counter() - started
    after = rss_kib()
    size = frontier.path.stat().st_size
    taken = frontier.next_round()
    while frontier.lease(16, deadline=1e12, strict=False):
        pass
    assert taken == n
    frontier.close()
    tmp.cleanup()
    return {
        "n": n,
        "base_mib": base / 1024,
        "after_mib": after / 1024,
        "peak_mib": rss_kib("VmHWM") / 1024,
        "file_mib": size / 2**20,
        "defer_s": deferred_s,
        "total_s": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,1000000")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="frontier", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.mode)))
        return
    print(
        f"{'N':>9} {'store':>8} {'RSS base':>9} {'RSS after':>10} {'RSS peak':>9} "
        f"{'file':>8} {'time':>7}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        for mode in ("frontier", "dict"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(n), "--mode", mode],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            r = json.loads(out)
            file = f"{r['file_mib']:.1f}MiB" if "file_mib" in r else "-"
            took = f"{r['total_s']:.1f}s" if "total_s" in r else "-"
            print(
                f"{n:>9} {mode:>8} {r['base_mib']:>8.1f}M {r['after_mib']:>9.1f}M "
                f"{r['peak_mib']:>8.1f}M {file:>8} {took:>7}"
            )


if __name__ == "__main__":
    main()
