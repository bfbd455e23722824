# ruff: noqa: E501 -- figures printed on one line each
"""Many workers, one crawl: the Redis crawl state measured.

    python bench/redis_workers.py seen [--urls 1000000]
        Redis memory of the seen-set: URLs pushed through RedisState (added,
        leased, acknowledged: what a finished crawl keeps), ``INFO memory``
        used_memory before and after, per URL; and the seen-set's buckets
        alone (MEMORY USAGE of every ``s:*`` hash).

    python bench/redis_workers.py workers [--site latency|synthetic] [--workers 1 4]
        Pages/s of 1 and of N ``scrapy crawl`` workers sharing one crawl on
        Redis, start-up included: ``latency`` is python3.11-doc behind a
        proxy adding 200 ms to every response (8 requests in flight per
        worker, 32 per origin allowed); ``synthetic`` is 10,000 small pages.

A redis-server is started on a free port for the run (``redis-server`` from
the distribution). Figures go to stdout; bench/README.md keeps them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import redis  # noqa: E402

from webspider.frontier.redisstate import RedisState, crawl_prefix  # noqa: E402
from webspider.frontier.state import StoredRequest  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit(
                "redis-server is not installed (apt-get install redis-server)"
            )
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(directory)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis.from_url(self.url)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def bench_seen(url: str, n: int) -> None:
    client = redis.Redis.from_url(url)
    state = RedisState(url, "bench")
    before = used_memory(client)
    started = time.monotonic()
    batch = 2000
    # a site's URLs: one origin, paths of 20-40 characters
    for start in range(0, n, batch):
        requests = []
        for i in range(start, min(n, start + batch)):
            u = f"http://www.example.org/section{i % 97}/page-{i}.html"
            requests.append(StoredRequest(key=u, url=u, depth=1 + i % 5))
        state.add(requests)
    added = time.monotonic() - started
    after_add = used_memory(client)
    while True:
        leases = state.lease(5000, deadline=time.time() + 600, strict=False)
        if not leases:
            break
        state.ack([lease.ticket for lease in leases])
    drained = time.monotonic() - started - added
    after_done = used_memory(client)
    buckets = 0
    prefix = crawl_prefix("bench").replace("{", "\\{").replace("}", "\\}")
    encodings: dict[bytes, int] = {}
    for key in client.scan_iter(match=prefix + "s:*", count=1000):
        buckets += int(client.memory_usage(key, samples=0) or 0)
        enc = client.object("encoding", key)
        encodings[enc] = encodings.get(enc, 0) + 1
    started = time.monotonic()
    probes = [
        f"http://www.example.org/section{i % 97}/page-{i}.html"
        for i in range(0, n, max(1, n // 100_000))
    ]
    for i in range(0, len(probes), 1000):
        state.contains_many(probes[i : i + 1000])
    checks = len(probes) / (time.monotonic() - started)
    print(f"URLs: {n:,} (add {n / added:,.0f}/s, lease+ack {n / drained:,.0f}/s)")
    print(f"used_memory with all queued: {(after_add - before) / n:.1f} bytes/URL")
    print(
        f"used_memory when all done (the seen-set and counters): {(after_done - before) / n:.1f} bytes/URL"
    )
    print(
        f"seen-set buckets alone (MEMORY USAGE): {buckets / n:.1f} bytes/URL, encodings {encodings}"
    )
    print(f"membership checks (batches of 1000, one client): {checks:,.0f}/s")


def crawl_workers(
    site_url: str, workers: int, state_url: str, key: str, extra: list[str]
) -> tuple[float, int]:
    out = Path(tempfile.mkdtemp(prefix="webspider-bench-workers-"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [
        sys.executable, "-m", "scrapy", "crawl", "webspider",
        "-a", f"url={site_url}", "-a", f"output={out}", "-a", "mirror=0",
        "-s", f"WEBSPIDER_STATE={state_url}", "-s", f"WEBSPIDER_STATE_KEY={key}",
        "-s", "WEBSPIDER_PROGRESS=off", "-s", "LOG_LEVEL=WARNING",
        *extra,
    ]  # fmt: skip
    started = time.monotonic()
    procs = [subprocess.Popen(command, cwd=ROOT, env=env) for _ in range(workers)]
    codes = [p.wait() for p in procs]
    seconds = time.monotonic() - started
    if any(codes):
        print(f"  exit codes {codes}")
    pages = sum(
        sum(1 for _ in path.open()) for path in out.glob("worker-*/pages.jsonl")
    )
    shutil.rmtree(out, ignore_errors=True)
    return seconds, pages


def bench_workers(url: str, site_name: str, counts: list[int]) -> None:
    from sites import latency_site, synthetic_site  # noqa: PLC0415

    if site_name == "latency":
        context = latency_site(0.2)
        extra = ["-s", "CONCURRENT_REQUESTS=8", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=32",
                 "-a", "max_depth=2", "-a", "defer=0"]  # fmt: skip
    else:
        context = synthetic_site(10_000, 30)
        extra = []
    with context as site:
        for n in counts:
            seconds, pages = crawl_workers(
                site.url, n, url, f"bench-{site_name}-{n}", extra
            )
            print(
                f"{site_name}: {n} worker(s): {pages} pages in {seconds:.1f} s = {pages / seconds:.1f} pages/s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    seen = sub.add_parser("seen")
    seen.add_argument("--urls", type=int, default=1_000_000)
    work = sub.add_parser("workers")
    work.add_argument("--site", choices=["latency", "synthetic"], default="latency")
    work.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp))
        try:
            if args.what == "seen":
                bench_seen(server.url, args.urls)
            else:
                bench_workers(server.url, args.site, args.workers)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
