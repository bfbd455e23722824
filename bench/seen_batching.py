"""Checking and adding a page's links one at a time or a page at a time.

    cd /work/wt/redis && PYTHONPATH=$PWD python bench/seen_batching.py

SQLiteState: 60,000 links (300 pages of 200, half already seen) against
100,000 URLs, ``key in state`` per link vs ``contains_many`` per page
(process time). RedisState (a redis-server on a free port, loopback): 5,000
links (50 pages of 100, half seen) against 20,000 URLs, and 1,000 new
links added one by one vs 100 per call (wall time: round trips).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from tests.support.redis_server import RedisServer
from webspider.frontier.redisstate import RedisState
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import StoredRequest


def stored(url: str, depth: int = 0) -> StoredRequest:
    return StoredRequest(key=url, url=url, depth=depth)


def sqlite(folder: Path) -> None:
    state = SQLiteState(folder / "s.sqlite3")
    urls = [f"http://a.test/p/{i}.html" for i in range(100000)]
    for i in range(0, len(urls), 5000):
        state.add([stored(u) for u in urls[i : i + 5000]])
    state.commit()
    pages = [
        [f"http://a.test/p/{(p * 997 + j * 31) % 200000}.html" for j in range(200)]
        for p in range(300)
    ]
    for _ in range(3):
        state._confirmed.clear()
        t = time.process_time()
        for page in pages:
            [k in state for k in page]
        one = time.process_time() - t
        state._confirmed.clear()
        t = time.process_time()
        for page in pages:
            state.contains_many(page)
        many = time.process_time() - t
        print(f"sqlite 60,000 checks: per link {one:.3f} s, per page {many:.3f} s")
    state.close()


def redis(folder: Path) -> None:
    with RedisServer(folder) as server:
        state = RedisState(server.url, "bench")
        urls = [f"http://a.test/p/{i}.html" for i in range(20000)]
        for i in range(0, len(urls), 2000):
            state.add([stored(u) for u in urls[i : i + 2000]])
        pages = [
            [f"http://a.test/p/{(p * 997 + j * 31) % 40000}.html" for j in range(100)]
            for p in range(50)
        ]
        for rep in range(3):
            state._confirmed.clear()
            t = time.perf_counter()
            for page in pages:
                [k in state for k in page]
            one = time.perf_counter() - t
            state._confirmed.clear()
            t = time.perf_counter()
            for page in pages:
                state.contains_many(page)
            many = time.perf_counter() - t
            print(f"redis 5,000 checks: per link {one:.3f} s, per page {many:.3f} s")
            new = [stored(f"http://a.test/n{rep}/{i}", 1) for i in range(2000)]
            t = time.perf_counter()
            for r in new[:1000]:
                state.add([r])
            one = time.perf_counter() - t
            t = time.perf_counter()
            for i in range(1000, 2000, 100):
                state.add_codes(new[i : i + 100])
            many = time.perf_counter() - t
            print(
                f"redis 1,000 adds: one by one {one:.3f} s, 100 per call {many:.3f} s"
            )
        state.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        sqlite(Path(tmp))
        redis(Path(tmp))
