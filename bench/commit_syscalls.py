"""The crawl state's commit cadence in system calls: pwrite and fsync a page.

    python bench/commit_syscalls.py --pages 4000 --modes nomirror,webspider \\
        --cadences 32,128,0 --workdir /tmp/webspider-commit17

Crawls a synthetic site of small pages (bench/scale/synth.py, served by
nginx as bench/smallpages.py serves it; ``--site pgdocs`` for PostgreSQL's
docs) once per mode and cadence (``-s WEBSPIDER_STATE_COMMIT_PAGES=N``; 0:
a commit a second only) under ``strace -f -c`` limited to the calls that
make a commit durable (``--seccomp-bpf``: the others run untraced, so the
crawl is not slowed by the tracing of its other calls). Prints, per page
answered 2xx, the ``pwrite64`` (SQLite's writes to its log and, at a
checkpoint, to the file) and the ``fsync``/``fdatasync`` (one for the log
and one for pages.jsonl a commit, more at a checkpoint) of every process
of the crawl, and the crawl's wall time (inflated by strace: compare within
a run only).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE / "scale"))

import smallpages  # noqa: E402
from run import _loadavg  # noqa: E402

CALLS = ("pwrite64", "fsync", "fdatasync")


def counts(report: str) -> dict[str, int]:
    """strace -c's table: call name → calls."""
    found = dict.fromkeys(CALLS, 0)
    for line in report.splitlines():
        fields = line.split()
        if fields and fields[-1] in found and re.fullmatch(r"\d+", fields[3]):
            found[fields[-1]] = int(fields[3])
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--site", choices=("synth", "pgdocs"), default="synth")
    p.add_argument("--pages", type=int, default=4000)
    p.add_argument("--modes", default="nomirror,webspider")
    p.add_argument("--cadences", default="32,128,0")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-scale"))
    p.add_argument("--project", type=Path, default=HERE.parent)
    args = p.parse_args()
    if shutil.which("strace") is None:
        print("bench: strace is not installed", file=sys.stderr)
        return 2
    served_cm = (
        smallpages.synth_site(args.pages, args.workdir)
        if args.site == "synth"
        else smallpages.pgdocs_site()
    )
    ns = argparse.Namespace(variants={}, set=[], floor_set=[], project=args.project)
    print(f"load at start {_loadavg()}")
    print(f"{'mode':<10} {'pages':>6} {'wall s':>7} {'2xx':>5} "
          f"{'pwrite/page':>12} {'fsync/page':>11}")  # fmt: skip
    with served_cm as served:
        for mode in args.modes.split(","):
            for cadence in args.cadences.split(","):
                with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
                    work = Path(tmp)
                    cmd = smallpages.make_command(mode, served, work, ns)
                    assert cmd is not None
                    cmd.argv += ["-s", f"WEBSPIDER_STATE_COMMIT_PAGES={cadence}"]
                    report = work / "strace.txt"
                    served.site.mark()
                    started = time.monotonic()
                    subprocess.run(
                        ["strace", "-f", "--seccomp-bpf", "-c", "-o", str(report),
                         "-e", "trace=" + ",".join(CALLS), *cmd.argv],
                        cwd=cmd.cwd, env=cmd.env, check=True,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    )  # fmt: skip
                    wall = time.monotonic() - started
                    ok = len({
                        r.path for r in served.site.requests()
                        if r.method == "GET" and 200 <= r.status < 300
                    })  # fmt: skip
                    found = counts(report.read_text())
                    syncs = found["fsync"] + found["fdatasync"]
                    print(
                        f"{mode:<10} {cadence:>6} {wall:7.2f} {ok:5d} "
                        f"{found['pwrite64'] / ok:12.2f} {syncs / ok:11.3f}",
                        flush=True,
                    )
    print(f"load at end {_loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
