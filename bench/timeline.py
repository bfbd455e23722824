"""Which process bounds a crawl's wall: the crawl's own, its page worker, or
neither (one waits for the other).

    python bench/timeline.py --site pgdocs --rounds 3 --checkout /work/main
    python bench/timeline.py --site docs -a mirror=0 --show 0.1

Serves the site (bench/sites.py: ``pgdocs``, ``docs``), runs ``scrapy crawl
webspider`` of this checkout (``--project``) and of each ``--checkout``,
alternating, and reads both processes' CPU from /proc every 50 ms (the page
worker is the crawl's child running ``webspider.pageworker.worker``). Per
run: wall, CPU of each process, the share of the wall each was on a core
(``busy``), the time both were below half a core while the crawl ran
(``both idle``: waiting on the disk or the state's commits), and, from the
log's timestamps, "Closing spider" to "Spider closed" (the end: the mirror's
fix-up, its index, the reports). ``--show S`` prints each run's timeline in
steps of S seconds (``c``/``w``: percent of a core, crawl/worker). Each
process's main thread is also split into user and system CPU and the time
it was runnable but waiting for a core (``/proc/PID/schedstat``), and
each process's peak RSS (``VmHWM``: which one holds the crawl's peak). ``--site
synth --pages N``: the synthetic site (bench/smallpages.py's);
``--nomirror-too``: every tree also with ``-a mirror=0``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import sites, smallpages  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator

_TICK = os.sysconf("SC_CLK_TCK")
_STAMP = re.compile(r"^(\d+\.\d+) ")


def cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def sched(pid: int) -> tuple[float, float, float] | None:
    """The process's main thread: user and system CPU seconds (/proc stat)
    and the seconds it was runnable but waiting for a core (schedstat's
    run delay). A sampling profiler that counts a runnable thread as busy
    (py-spy) counts the wait too."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/task/{pid}/schedstat") as fh:
            waited = int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None
    return int(fields[11]) / _TICK, int(fields[12]) / _TICK, waited


def peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident set so far (VmHWM), in MB."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def worker_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            children = fh.read().split()
        for child in children:
            with open(f"/proc/{child}/cmdline", "rb") as fh:
                if b"webspider.pageworker.worker" in fh.read():
                    return int(child)
    except OSError:
        pass
    return None


def crawl(project: Path, url: str, out: Path, extra: list[str]) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(project)}
    log = out / "log"
    started, at = time.time(), time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "scrapy", "crawl", "webspider",
             "-a", f"start_urls={url}", "-a", f"output={out / 'out'}",
             "-s", "LOG_FORMAT=%(created).3f %(name)s %(levelname)s: %(message)s",
             *extra],
            cwd=project, env=env, stdout=fh, stderr=subprocess.STDOUT,
        )  # fmt: skip
        samples: list[tuple[float, float, float]] = []
        worker: int | None = None
        crawl_cpu = worker_cpu = 0.0
        crawl_sched = worker_sched = (0.0, 0.0, 0.0)
        crawl_rss = worker_rss = 0.0
        while proc.poll() is None:
            worker = worker or worker_of(proc.pid)
            crawl_cpu = cpu_s(proc.pid) or crawl_cpu
            crawl_sched = sched(proc.pid) or crawl_sched
            # the peak so far; the last sample misses at most 50 ms of growth
            crawl_rss = peak_rss_mb(proc.pid) or crawl_rss
            if worker is not None:
                worker_cpu = cpu_s(worker) or worker_cpu
                worker_sched = sched(worker) or worker_sched
                worker_rss = peak_rss_mb(worker) or worker_rss
            samples.append((time.monotonic() - at, crawl_cpu, worker_cpu))
            time.sleep(0.05)
    wall = time.monotonic() - at
    both_idle = 0.0
    for (t0, c0, w0), (t1, c1, w1) in itertools.pairwise(samples):
        dt = t1 - t0
        if dt > 0 and (c1 - c0) / dt < 0.5 and (w1 - w0) / dt < 0.5:
            both_idle += dt
    marks: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        match = _STAMP.match(line)
        if match is None:
            continue
        for name in ("Closing spider", "Spider closed"):
            if name in line:
                marks[name] = float(match.group(1)) - started
    text = log.read_text(errors="replace")
    fallbacks = re.findall(r"'webspider/page_worker/fallback_count/(\w+)': (\d+)", text)
    fallbacks += re.findall(r"'webspider/page_worker/(read_here)_count': (\d+)", text)
    return {
        "fallbacks": dict(fallbacks),
        "wall": wall,
        "crawl": crawl_cpu,
        "worker": worker_cpu,
        "both_idle": both_idle,
        "end": marks.get("Spider closed", 0.0) - marks.get("Closing spider", 0.0),
        "rc": proc.returncode,
        "samples": samples,
        "crawl_sched": crawl_sched,
        "worker_sched": worker_sched,
        "rss": (crawl_rss, worker_rss),
    }


def show(samples: list[tuple[float, float, float]], step: float) -> None:
    line, last = [], (0.0, 0.0, 0.0)
    for t, c, w in samples:
        if t - last[0] >= step:
            dt = t - last[0]
            crawl_pct = 100 * (c - last[1]) / dt
            worker_pct = 100 * (w - last[2]) / dt
            line.append(f"{t:5.2f} c{crawl_pct:3.0f} w{worker_pct:3.0f}")
            last = (t, c, w)
    for i in range(0, len(line), 6):
        print("    " + "  ".join(line[i : i + 6]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", choices=("pgdocs", "docs", "synth"), default="pgdocs")
    parser.add_argument("--pages", type=int, default=4000,
                        help="the synthetic site's pages (--site synth)")  # fmt: skip
    parser.add_argument("--workdir", type=Path, default=None,
                        help="the synthetic site's folder (kept)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--project", type=Path, default=HERE.parent)
    parser.add_argument("--checkout", type=Path, action="append", default=[])
    parser.add_argument("-a", dest="args", action="append", default=[],
                        help="spider argument NAME=VALUE (repeatable)")  # fmt: skip
    parser.add_argument("--show", type=float, default=0.0)
    parser.add_argument("--nomirror-too", action="store_true",
                        help="each tree's crawl again with -a mirror=0")  # fmt: skip
    args = parser.parse_args(argv)
    extra = [arg for value in args.args for arg in ("-a", value)]
    trees = [(tree, extra) for tree in (args.project, *args.checkout)]
    if args.nomirror_too:
        trees += [(tree, [*extra, "-a", "mirror=0"]) for tree, _ in trees]
    print("load", Path("/proc/loadavg").read_text().strip())
    print(f"{'tree':<28} {'wall':>6} {'crawl':>6} {'worker':>6} "
          f"{'busy c/w':>9} {'both idle':>9} {'end':>6}")  # fmt: skip
    with (
        served(args) as url,
        tempfile.TemporaryDirectory(prefix="timeline-") as tmp,
    ):
        for round_ in range(args.rounds):
            for i, (tree, tree_args) in enumerate(trees):
                out = Path(tmp) / f"{round_}-{i}"
                out.mkdir()
                run = crawl(tree, url, out, tree_args)
                name = str(tree)[-20:] + (
                    " mirror=0" if "mirror=0" in tree_args else ""
                )
                wall = float(run["wall"])  # type: ignore[arg-type]
                c, w = float(run["crawl"]), float(run["worker"])  # type: ignore[arg-type]
                print(f"{name[-28:]:<28} {wall:6.2f} {c:6.2f} {w:6.2f} "
                      f"{100 * c / wall:4.0f}/{100 * w / wall:<4.0f} "
                      f"{run['both_idle']:9.2f} {run['end']:6.3f}"
                      + ("" if run["rc"] == 0 else f"  exit {run['rc']}"))  # fmt: skip
                cu, cs, cw = run["crawl_sched"]  # type: ignore[misc]
                wu, ws, ww = run["worker_sched"]  # type: ignore[misc]
                print(f"{'':<28} main threads: crawl user {cu:.2f} sys {cs:.2f} "
                      f"waited for a core {cw:.2f}; worker user {wu:.2f} "
                      f"sys {ws:.2f} waited {ww:.2f}")  # fmt: skip
                cr, wr = run["rss"]  # type: ignore[misc]
                print(f"{'':<28} peak RSS MB: crawl {cr:.0f}, worker {wr:.0f}")
                if run["fallbacks"]:
                    print(f"{'':<28} done by the crawl, not the page worker: "
                          f"{run['fallbacks']}")  # fmt: skip
                if args.show:
                    show(run["samples"], args.show)  # type: ignore[arg-type]
    return 0


@contextlib.contextmanager
def served(args: argparse.Namespace) -> Iterator[str]:
    """The site's URL while it is served."""
    if args.site == "synth":
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="timeline-synth-"))
        with smallpages.synth_site(args.pages, workdir) as site:
            yield site.site.url
        return
    serve = sites.pgdocs_site if args.site == "pgdocs" else sites.docs_site
    with serve() as site:
        yield site.url


if __name__ == "__main__":
    raise SystemExit(main())
