"""What the crawl state's commits cost the crawl's thread, by cadence.

    PYTHONPATH=$PWD flock /work/tmp/bench.lock python bench/commit_cost.py \\
        /tmp/commit17-sp/site-10000-seed14-spread0.5 2 \\
        "n32=-a mirror=0" "n128=-a mirror=0 -s WEBSPIDER_STATE_COMMIT_PAGES=128" …

Serves a synthetic site (bench/scale/synth.py's folder) with nginx and crawls
it once per variant (LABEL=crawl arguments) per round, the order reversed
every other round, with bench/commitprobe/sitecustomize.py loaded in the
crawl: it prints the crawl's wall, the CPU of all its processes, and per
timed function (``SQLiteState.commit``, ``wait_durable``, the records'
``write_flags``, the connection's COMMIT, split by whether it checkpointed:
``COMMIT-ckpt``, the next one ``COMMIT-after``, the rest ``COMMIT-plain``)
the calls, wall and thread CPU. COMMIT_COST_TREE: the tree crawled (this
one's by default), COMMIT_COST_WORK: the crawl's folder, COMMIT_COST_NAME:
the results' name (bench/results/<name>.json). A variant's ``ENV=NAME=VALUE``
words set the crawl's environment (``ENV=COMMIT_PROBE_WAL=4194304``: the
probe sets the state's log limit, ``_WAL_BYTES``, to that;
``ENV=COMMIT_PROBE_JSL=N``: the log file's ``journal_size_limit`` alone;
``ENV=COMMIT_PROBE_SHARE=N``: ``_WAL_SHARE``, the log's limit as a share of
the state file, in branch ckpt17's d474300 only, a rule tried and reverted).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import sites  # noqa: E402


def main() -> None:
    site, rounds = Path(sys.argv[1]), int(sys.argv[2])
    variants = [v.split("=", 1) for v in sys.argv[3:]]
    # the tree crawled (another one: COMMIT_COST_TREE, e.g. a before-tree)
    tree = os.environ.get("COMMIT_COST_TREE", str(HERE.parent))
    work = Path(os.environ.get("COMMIT_COST_WORK", "/tmp/commit-cost"))
    work.mkdir(exist_ok=True)
    results = []
    with sites.static_server(site) as (port, _access):
        url = f"http://127.0.0.1:{port}/"
        for r in range(rounds):
            for label, args in variants if r % 2 == 0 else variants[::-1]:
                out = work / "out"
                shutil.rmtree(out, ignore_errors=True)
                probe = work / "probe.txt"
                probe.unlink(missing_ok=True)
                # a variant's ENV=NAME=VALUE words set the crawl's environment
                words = args.split()
                env = {
                    **os.environ,
                    "PYTHONPATH": f"{HERE / 'commitprobe'}:{tree}",
                    "COMMIT_PROBE": str(probe),
                } | dict(w[4:].split("=", 1) for w in words if w.startswith("ENV="))
                words = [w for w in words if not w.startswith("ENV=")]
                started = time.perf_counter()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(
                    [sys.executable, "-m", "scrapy", "crawl", "webspider",
                     "-a", f"start_urls={url}", "-a", f"output={out}",
                     "-s", "WEBSPIDER_PROGRESS=off", "-s", "LOG_LEVEL=ERROR",
                     *words],
                    cwd=tree, env=env, check=True,
                )  # fmt: skip
                wall = time.perf_counter() - started
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = sum(
                    getattr(after, f) - getattr(before, f)
                    for f in ("ru_utime", "ru_stime")
                )
                line = probe.read_text().strip()
                load = os.getloadavg()[0]
                print(
                    f"r{r} {label:14} wall {wall:6.2f} cpu(all) {cpu:6.2f} "
                    f"load {load:.1f} | {line}",
                    flush=True,
                )
                results.append(
                    {"round": r, "label": label, "wall": wall, "cpu": cpu}
                    | {"probe": line}
                )
    name = os.environ.get("COMMIT_COST_NAME", "commit-cost")
    (HERE / "results" / f"{name}.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
