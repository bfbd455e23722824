"""What a crawl's peak RSS is made of, per process (not a test).

    python bench/rss_parts.py                                  # synth, 10,000 pages
    python bench/rss_parts.py --contenders webspider,nomirror,baseline
    python bench/rss_parts.py --site pgdocs --project /work/main
    python bench/rss_parts.py --site synthetic --pages 2000 --links 100   # run.py's

Runs each contender once (smallpages.py's sites and commands) and samples,
every 50 ms, /proc/PID/status of the crawl's process and of each process it
started (webspider's page worker): RSS, of it anonymous and file-backed
memory, shared memory. At each new peak of their sum (at most every 2 s
once it only creeps up) it reads /proc/PID/smaps, so that the peak's
resident memory is shown mapping by mapping: Python's arenas and the C
heap (``[anon]``, ``[heap]``), each shared library, the crawl state's files
if they were mapped. It prints, per contender, the sum at the peak (as
bench/run.py measures peak RSS: the processes' RSS added up), the same in
PSS (a shared page counted once in all), each process's parts, and its
RSS over the crawl; and writes the peak's mappings (summed by name) and
every 10th sample to ``bench/results/<name>.json``.

The peak here is sampled every 50 ms, run.py's every 20 ms: a short peak
run.py sees may be missed here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE / "scale"))  # after bench/: scale/run.py is not run.py

import sites  # noqa: E402
import smallpages  # noqa: E402
from run import TreeRss  # noqa: E402

FIELDS = ("VmRSS", "RssAnon", "RssFile", "RssShmem")
MIB = 1024  # KiB


def status(pid: int) -> dict[str, int]:
    """The RSS fields of /proc/PID/status, in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in FIELDS:
                out[name] = int(value.split()[0])
    return out


def smaps(pid: int) -> list[dict[str, Any]]:
    """Each mapping of /proc/PID/smaps: its name and its KiB figures."""
    maps: list[dict[str, Any]] = []
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if not parts[0].endswith(":"):  # a mapping's first line
                maps.append({"name": parts[5] if len(parts) > 5 else "[anon]"})
            elif len(parts) >= 2 and parts[1].isdigit():
                maps[-1][parts[0][:-1]] = int(parts[1])
    return maps


def role(pid: int, known: dict[int, str]) -> str:
    """The process's part, as its command line said when first seen (an
    exited process has none)."""
    if pid not in known:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            return "?"
        worker = b"webspider.pageworker.worker" in cmdline
        known[pid] = "page worker" if worker else "crawl"
    return known[pid]


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.tree = TreeRss(pid)
        self.start_time = time.monotonic()
        #: (seconds, {"role pid": status})
        self.samples: list[tuple[float, dict[str, dict[str, int]]]] = []
        self.peak_kib = 0
        #: (seconds, sum KiB, {"role pid": mappings}) at the peak
        self.peak: tuple[float, int, dict[str, list[dict[str, Any]]]] | None = None
        self._done = threading.Event()
        self._roles: dict[int, str] = {}

    def run(self) -> None:
        last_read = -10.0
        while not self._done.wait(0.05):
            now = time.monotonic() - self.start_time
            procs = {}
            for pid in self.tree._tree():
                try:
                    procs[pid] = (role(pid, self._roles), status(pid))
                except OSError:
                    continue
            total = sum(s.get("VmRSS", 0) for _, s in procs.values())
            self.samples.append(
                (round(now, 2), {f"{r} {pid}": s for pid, (r, s) in procs.items()})
            )
            if total <= self.peak_kib:
                continue
            self.peak_kib = total
            read = self.peak[1] if self.peak else 0
            if total > read + 256 or now - last_read > 2:
                try:
                    maps = {f"{r} {pid}": smaps(pid) for pid, (r, _) in procs.items()}
                except OSError:
                    continue
                self.peak = (round(now, 2), total, maps)
                last_read = now

    def stop(self) -> None:
        self._done.set()
        self.join()


def mapping_name(name: str) -> str:
    """Shared libraries by file name; Python's own modules together."""
    if "/site-packages/" in name:
        package = name.partition("/site-packages/")[2].partition("/")[0]
        return f"site-packages/{package}"
    if "/lib-dynload/" in name:
        return "Python's extension modules (lib-dynload)"
    return name.rsplit("/", 1)[-1] if name.startswith("/") else name


def parts(maps: list[dict[str, Any]], top: int) -> list[tuple[str, int, int]]:
    """(mapping, RSS KiB, anonymous KiB), largest first."""
    rss: Counter[str] = Counter()
    anon: Counter[str] = Counter()
    for m in maps:
        name = mapping_name(m["name"])
        rss[name] += m.get("Rss", 0)
        anon[name] += m.get("Anonymous", 0)
    return [(name, kib, anon[name]) for name, kib in rss.most_common(top)]


def crawl(
    name: str, served: smallpages.Served, args: argparse.Namespace
) -> dict[str, Any]:
    ns = argparse.Namespace(
        project=args.project, set=args.set, floor_set=[], variants={}, before=None
    )
    with tempfile.TemporaryDirectory(prefix="webspider-rss-parts-") as tmp:
        cmd = smallpages.make_command(name, served, Path(tmp), ns)
        assert cmd is not None
        served.site.mark()
        with open(Path(tmp) / "crawl.log", "wb") as log:
            start = time.perf_counter()
            proc = subprocess.Popen(
                cmd.argv, cwd=cmd.cwd, env=cmd.env or None,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
            sampler = Sampler(proc.pid)
            sampler.start()
            _pid, status_code, rusage = os.wait4(proc.pid, 0)
            sampler.stop()
            wall = time.perf_counter() - start
    pages = {
        r.path
        for r in served.site.requests()
        if r.method == "GET" and 200 <= r.status < 300
    }
    return {
        "contender": name,
        "exit": os.waitstatus_to_exitcode(status_code),
        "wall_s": round(wall, 2),
        "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 2),
        "pages": len(pages),
        "maxrss_kib": rusage.ru_maxrss,
        "peak_kib": sampler.peak_kib,
        "peak": sampler.peak,
        "samples": sampler.samples,
    }


def report(run: dict[str, Any], top: int) -> str:
    lines = [
        f"## {run['contender']}: peak {run['peak_kib'] / MIB:.1f} MB "
        f"(the processes' RSS added up; ru_maxrss {run['maxrss_kib'] / MIB:.1f}), "
        f"{run['pages']} pages, wall {run['wall_s']} s, CPU {run['cpu_s']} s, "
        f"exit {run['exit']}",
        "",
    ]
    if run["peak"] is None:
        return "\n".join(lines)
    at, total, maps = run["peak"]
    pss = sum(m.get("Pss", 0) for ms in maps.values() for m in ms)
    lines.append(
        f"At {at} s: RSS {total / MIB:.1f} MB, PSS {pss / MIB:.1f} MB "
        "(a page shared by the processes counted once)."
    )
    for proc, ms in maps.items():
        rss = sum(m.get("Rss", 0) for m in ms)
        anon = sum(m.get("Anonymous", 0) for m in ms)
        lines += [
            "",
            f"| {proc}: RSS {rss / MIB:.1f} MB, anonymous {anon / MIB:.1f} | MB "
            "| of it anonymous |",
            "|---|--:|--:|",
        ]
        lines += [
            f"| {name} | {kib / MIB:.2f} | {a / MIB:.2f} |"
            for name, kib, a in parts(ms, top)
        ]
    samples = run["samples"]
    columns = max(len(procs) for _, procs in samples)
    lines += [
        "",
        "| s | " + " | ".join(("MB: RSS (anonymous, file)",) * columns) + " |",
        "|--:|" + "---|" * columns,
    ]
    step = max(1, len(samples) // 12)
    for at, procs in samples[::step] + samples[-1:]:
        cells = [
            f"{p}: {s.get('VmRSS', 0) / MIB:.1f} ({s.get('RssAnon', 0) / MIB:.1f}, "
            f"{s.get('RssFile', 0) / MIB:.1f})"
            for p, s in sorted(procs.items())
        ]
        lines.append(f"| {at} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compact(run: dict[str, Any]) -> dict[str, Any]:
    """What the JSON keeps of a run: the peak's mappings summed by name
    (KiB: RSS, anonymous, PSS), every 10th sample."""
    out = dict(run, samples=run["samples"][::10] + run["samples"][-1:])
    if run["peak"] is not None:
        at, total, maps = run["peak"]
        summed: dict[str, dict[str, dict[str, int]]] = {}
        for proc, ms in maps.items():
            names: dict[str, dict[str, int]] = {}
            for m in ms:
                part = names.setdefault(
                    mapping_name(m["name"]), {"rss": 0, "anon": 0, "pss": 0}
                )
                part["rss"] += m.get("Rss", 0)
                part["anon"] += m.get("Anonymous", 0)
                part["pss"] += m.get("Pss", 0)
            summed[proc] = names
        out["peak"] = [at, total, summed]
    return out


@contextlib.contextmanager
def synthetic_site(pages: int, links: int) -> Iterator[smallpages.Served]:
    """bench/run.py's synthetic site (``--quick``: 2,000 pages x 100 links)."""
    with sites.synthetic_site(pages, links) as site:
        yield smallpages.Served(site, [])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--site", choices=("synth", "pgdocs", "synthetic"), default="synth")
    p.add_argument(
        "--pages", type=int, default=10_000, help="synth's (synthetic's) pages"
    )
    p.add_argument("--links", type=int, default=100, help="synthetic's links a page")
    p.add_argument("--contenders", default="webspider", help="smallpages.py's names")
    p.add_argument("--project", type=Path, default=HERE.parent)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-scale"))
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--top", type=int, default=12, help="mappings shown per process")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--name", default="rss-parts")
    args = p.parse_args(argv)
    if args.site == "synth":
        site = smallpages.synth_site(args.pages, args.workdir)
    elif args.site == "synthetic":
        site = synthetic_site(args.pages, args.links)
    else:
        site = smallpages.pgdocs_site()
    runs = []
    with site as served:
        for name in args.contenders.split(","):
            run = crawl(name, served, args)
            runs.append(run)
            print(report(run, args.top) + "\n", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps([compact(r) for r in runs]))
    return 0 if all(r["exit"] in (0, 8) for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
