"""CPU and wall time of `scrapy crawl` on a generated local site (1500 pages,
60 links each, ~2% of links to 404s), with the reports off, on (default), and
with anchors + normalised duplicates; three interleaved runs each.

    cd <worktree> && PYTHONPATH=$PWD python bench/reports_overhead.py
"""

import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = "/tmp/webspider-bench-reports"
sys.path.insert(0, str(ROOT))
from tests.support.server import TestServer, html  # noqa: E402 (after the path)

N, L = 1500, 60
random.seed(2)
with TestServer(name="site.test") as s:
    for i in range(N):
        targets = [0, 1, 2, 3, *random.sample(range(N + 30), L - 4)]  # ~2% link to 404s
        body = "".join(f'<a href="/p{t}">page {t}</a>' for t in targets)
        s.add("/" if i == 0 else f"/p{i}", html(body, title=f"P{i}"))
    s.add("/p0", html("dup of nothing", title="x"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    configs = (
        (
            "reports off",
            [
                "-s",
                "WEBSPIDER_BROKEN_LINKS_ENABLED=0",
                "-s",
                "WEBSPIDER_DUPLICATES_ENABLED=0",
                "-s",
                "WEBSPIDER_REPORT_ENABLED=0",
                "-s",
                "WEBSPIDER_PROGRESS=off",
            ],
        ),
        (
            "reports on (default)",
            ["-s", "WEBSPIDER_PROGRESS=log", "-s", "WEBSPIDER_PROGRESS_INTERVAL=5"],
        ),
        (
            "reports on + anchors + normalize",
            [
                "-a",
                "check_anchors=1",
                "-s",
                "WEBSPIDER_DUPLICATES_NORMALIZE=1",
                "-s",
                "WEBSPIDER_PROGRESS=log",
            ],
        ),
    )
    for _round in range(3):  # interleaved, so drift hits every config alike
        for label, extra in configs:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            p = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "scrapy",
                    "crawl",
                    "webspider",
                    "-a",
                    f"start_urls={s.url('/')}",
                    "-s",
                    "DNS_RESOLVER=tests.support.resolver.LoopbackTestResolver",
                    "-s",
                    f"WEBSPIDER_OUTPUT={OUT}",
                    "-s",
                    "LOG_LEVEL=WARNING",
                    "-s",
                    "RETRY_TIMES=0",
                    "-s",
                    "CONCURRENT_REQUESTS_PER_DOMAIN=16",
                    *extra,
                ],
                cwd=ROOT,
                check=False,
                env=env,
                capture_output=True,
                text=True,
            )
            wall = time.monotonic() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (
                after.ru_stime - before.ru_stime
            )
            broken = Path(OUT, "broken-links.jsonl")
            lines = broken.read_text().count("\n") if broken.exists() else "-"
            print(
                f"{label:35s} rc={p.returncode} wall {wall:5.2f}s cpu {cpu:5.2f}s "
                f"broken lines {lines}",
                flush=True,
            )
            if os.path.exists(OUT + "/broken-links.jsonl"):
                os.remove(OUT + "/broken-links.jsonl")
