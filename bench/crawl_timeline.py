"""Benchmark (not a test): the crawl process's CPU over one crawl, a step of
requests at a time — whether its cost a page grows, falls or stays as the
crawl goes on.

    python bench/crawl_timeline.py [--pages 10000] [--step 1000]
        [--modes floor,nomirror,nomirror@before] [--project P] [--before B]
        [--workdir /tmp/webspider-speed]

Serves bench/smallpages.py's synthetic site (nginx), runs each contender of
``--modes`` in turn (its names: ``floor``, ``nomirror``, ``webspider``, and
``@before`` for the checkout ``--before``), reads the crawl process's own
CPU (utime + stime of /proc/PID/stat: not its page worker's) every 50 ms,
and prints, for each step of ``--step`` requests the server logged, the
CPU milliseconds a request of that step. The first step holds the start-up.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import smallpages  # noqa: E402

_HZ = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _HZ


def timeline(served: smallpages.Served, mode: str, args: argparse.Namespace) -> str:
    log = served.site._read_log.__self__.path  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="webspider-timeline-") as tmp:
        cmd = smallpages.make_command(mode, served, Path(tmp), args)
        if cmd is None:
            return f"{mode}: not available"
        start = log.stat().st_size if log.exists() else 0
        with (Path(tmp) / "crawl.log").open("w") as out:
            proc = subprocess.Popen(
                cmd.argv, cwd=cmd.cwd, env=cmd.env or None,
                stdout=subprocess.DEVNULL, stderr=out,
            )  # fmt: skip
            marks: list[tuple[int, float]] = []
            served_n, cpu, fh = 0, 0.0, None
            while proc.poll() is None:
                time.sleep(0.05)
                try:
                    cpu = _cpu(proc.pid)
                except OSError:
                    break
                if fh is None and log.exists():
                    fh = log.open("rb")
                    fh.seek(start)
                if fh is not None:
                    served_n += fh.read().count(b"\n")
                while served_n >= (len(marks) + 1) * args.step:
                    marks.append(((len(marks) + 1) * args.step, cpu))
            proc.wait()
            if fh is not None:
                fh.close()
    steps = []
    before = (0, 0.0)
    for requests, at in marks:
        steps.append(f"{(at - before[1]) / (requests - before[0]) * 1000:.2f}")
        before = (requests, at)
    return f"{mode:<16} CPU {cpu:6.2f} s; ms a request by {args.step}: " + " ".join(
        steps
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=10000)
    ap.add_argument("--step", type=int, default=1000)
    ap.add_argument("--modes", default="floor,nomirror")
    ap.add_argument("--project", type=Path, default=HERE.parent)
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-speed"))
    args = ap.parse_args()
    args.variants, args.set, args.floor_set = {}, [], []
    with smallpages.synth_site(args.pages, args.workdir) as served:
        for mode in args.modes.split(","):
            print(timeline(served, mode, args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
