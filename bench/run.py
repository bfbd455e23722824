"""webspider's benchmark suite: one command, a side-by-side table.

    python bench/run.py                      # 3 rounds, all sites
    python bench/run.py --quick              # 1 round, small synthetic site
    python bench/run.py --runs 5 --sites docs,latency --contenders webspider,wget

Serves each site on 127.0.0.1 (bench/sites.py), runs each contender
(bench/contenders.py) on it in alternating order round after round, measures
each child process with os.wait4 (wall time, user+sys CPU, peak RSS), reads
what the origin server served from its access log, and writes
bench/results/latest.{md,json,png}. See bench/README.md.

A benchmark is one function ``(args) -> list[Measurement]`` in BENCHMARKS;
the crawl benchmark below is the first (a frontier-memory benchmark for the
deferred frontier would be another).
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import contenders as contenders_mod  # noqa: E402
import report  # noqa: E402
import sites as sites_mod  # noqa: E402

DEFAULT_PROJECT = HERE.parent
DEFAULT_CONTENDERS = ("webspider", "baseline", "wget")


@dataclass
class Measurement:
    """One run of one contender on one site."""

    benchmark: str
    site: str
    contender: str
    round: int
    wall_s: float
    user_s: float
    sys_s: float
    maxrss_mb: float
    exit_code: int
    timed_out: bool
    #: requests the origin server logged during the run
    requests: int
    #: distinct (method, path) the server saw
    distinct_urls: int
    #: distinct GET paths answered 2xx
    pages_ok: int
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s


def run_measured(
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None,
    log_path: Path,
    timeout: float,
    *,
    on_start: Callable[[int], object] | None = None,
) -> tuple[float, resource.struct_rusage, int, bool, int]:
    """Run argv; return (wall seconds, rusage, exit code, timed out, peak
    resident memory of it and its descendants in KiB).

    The child gets its own process group so a timeout kills everything it
    started; os.wait4 gives the child's own CPU time and peak RSS.
    ``on_start(pid)`` is called once the child runs (to watch it)."""
    with log_path.open("wb") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if on_start is not None:
            on_start(proc.pid)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        sampler = TreeRss(proc.pid)
        sampler.start()
        try:
            _pid, status, rusage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            sampler.stop()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is the largest single process (the crawler or one it waited
    # for); a crawler of several processes (webspider's page worker) is
    # measured by the sum of their resident memory, sampled
    peak_kib = max(rusage.ru_maxrss, sampler.peak_kib)
    return wall, rusage, proc.returncode, timed_out.is_set(), peak_kib


class TreeRss(threading.Thread):
    """Samples the resident memory of a process and its descendants (every
    20 ms, from /proc) and keeps the largest sum."""

    PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kib = 0
        self._done = threading.Event()

    def _tree(self) -> list[int]:
        """The process and its descendants, but children forked and not yet
        exec'd (same command line as the parent: ``platform`` running
        ``uname -p``), whose resident pages are still their parent's."""
        pids, todo = [], [(self.pid, b"")]
        while todo:
            pid, parent = todo.pop()
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
                if cmdline == parent:
                    continue
                pids.append(pid)
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as f:
                        todo.extend((int(c), cmdline) for c in f.read().split())
            except OSError:
                continue
        return pids

    def _rss_kib(self, pid: int) -> int:
        try:
            with open(f"/proc/{pid}/statm") as f:
                return int(f.read().split()[1]) * self.PAGE_KIB
        except (OSError, IndexError, ValueError):
            return 0

    def run(self) -> None:
        while not self._done.wait(0.02):
            total = sum(self._rss_kib(pid) for pid in self._tree())
            self.peak_kib = max(self.peak_kib, total)

    def stop(self) -> None:
        self._done.set()
        self.join()


# --- sites ----------------------------------------------------------------------


def site_factories(
    args: argparse.Namespace,
) -> dict[str, Callable[[], AbstractContextManager[sites_mod.Site]]]:
    return {
        "docs": sites_mod.docs_site,
        "synthetic": lambda: sites_mod.synthetic_site(
            args.synthetic_pages, args.synthetic_links
        ),
        "latency": lambda: sites_mod.latency_site(args.latency_ms / 1000),
        "onepage": sites_mod.one_page_site,
        "pgdocs": sites_mod.pgdocs_site,
    }


# --- benchmarks -----------------------------------------------------------------


def crawl_benchmark(args: argparse.Namespace) -> list[Measurement]:
    """Each contender crawls each site, rounds alternating the order."""
    factories = site_factories(args)
    results: list[Measurement] = []
    available = {}
    for name in args.contenders:
        make = _contender(name, args)
        if make("http://127.0.0.1/", Path("."), args.project) is None:
            base = name.partition("@")[0]
            hint = contenders_mod.MISSING_HINT.get(base, "")
            print(f"bench: skipping {name}: not installed ({hint})", file=sys.stderr)
            continue
        available[name] = make
    for site_name in args.sites:
        try:
            site_cm = factories[site_name]()
            site = site_cm.__enter__()
        except sites_mod.SiteUnavailable as exc:
            print(f"bench: skipping site {site_name}: {exc}", file=sys.stderr)
            continue
        try:
            print(f"== {site_name}: {site.description} at {site.url}", file=sys.stderr)
            names = list(available)
            for rnd in range(args.runs):
                # Rotate the order each round so no contender always runs
                # first (cold caches) or right after the heaviest one.
                shift = rnd % len(names)
                for name in names[shift:] + names[:shift]:
                    results.append(_crawl_once(site, name, available[name], rnd, args))
        finally:
            site_cm.__exit__(None, None, None)
    return results


def _contender(
    name: str, args: argparse.Namespace
) -> Callable[[str, Path, Path], contenders_mod.Command | None]:
    """NAME, or NAME@LABEL: the same contender on the checkout given by
    ``--checkout LABEL=PATH`` (before/after runs of two commits alternate in
    one run, on one server, under one load)."""
    base, _, label = name.partition("@")
    make = contenders_mod.CONTENDERS[base]
    if not label:
        return make
    other = args.checkouts[label]
    return lambda url, workdir, _project: make(url, workdir, other)


def _crawl_once(
    site: sites_mod.Site,
    name: str,
    make: Callable[[str, Path, Path], contenders_mod.Command | None],
    rnd: int,
    args: argparse.Namespace,
) -> Measurement:
    with tempfile.TemporaryDirectory(prefix=f"webspider-bench-{name}-") as tmp:
        workdir = Path(tmp)
        command = make(site.url, workdir, args.project)
        assert command is not None
        site.mark()
        log_path = workdir / "crawl.log"
        started = time.time()
        wall, rusage, code, timed_out, peak_kib = run_measured(
            command.argv, command.cwd, command.env or None, log_path, args.timeout
        )
        time.sleep(0.05)  # let nginx flush its last access-log lines
        served = site.requests()
        if args.keep_logs:
            keep = args.out / "logs" / f"{site.name}-{name}-{rnd}.log"
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(log_path, keep)
        if code not in (0, 8) or timed_out:  # wget exits 8 on any 404
            tail = log_path.read_text(errors="replace")[-2000:]
            print(
                f"bench: {name} on {site.name} exited {code}"
                f"{' (timed out)' if timed_out else ''}:\n{tail}",
                file=sys.stderr,
            )
    extra = {}
    if served and served[0].at:
        extra["first_request_s"] = round(min(r.at for r in served) - started, 3)
        extra["after_last_s"] = round(started + wall - max(r.at for r in served), 3)
    distinct = {(r.method, r.path) for r in served}
    ok = {r.path for r in served if r.method == "GET" and 200 <= r.status < 300}
    m = Measurement(
        benchmark="crawl",
        site=site.name,
        contender=name,
        round=rnd,
        wall_s=round(wall, 3),
        user_s=round(rusage.ru_utime, 3),
        sys_s=round(rusage.ru_stime, 3),
        maxrss_mb=round(peak_kib / 1024, 1),
        exit_code=code,
        timed_out=timed_out,
        requests=len(served),
        distinct_urls=len(distinct),
        pages_ok=len(ok),
        extra=extra,
    )
    print(
        f"   round {rnd + 1} {name:<10} wall {m.wall_s:7.2f}s cpu {m.cpu_s:7.2f}s "
        f"rss {m.maxrss_mb:6.0f}MB  requests {m.requests:6d} "
        f"distinct {m.distinct_urls:6d}"
        f" first {extra.get('first_request_s', 0):5.2f}s"
        f" after last {extra.get('after_last_s', 0):5.2f}s",
        file=sys.stderr,
    )
    return m


#: name → benchmark. Adding a benchmark is adding one function here.
BENCHMARKS: dict[str, Callable[[argparse.Namespace], list[Measurement]]] = {
    "crawl": crawl_benchmark,
}


# --- machine --------------------------------------------------------------------


def _cmd_version(argv: list[str]) -> str:
    try:
        out = subprocess.run(
            argv, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "not installed"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else "?"


def machine_info(project: Path) -> dict[str, str]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    # versions of the parts measured, read only when the results are written
    import lxml.etree  # noqa: PLC0415
    import scrapy  # noqa: PLC0415

    commit = _cmd_version(["git", "-C", str(project), "log", "-1", "--format=%h %s"])
    nginx = sites_mod.find_nginx()
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "scrapy": scrapy.__version__,
        "lxml": ".".join(map(str, lxml.etree.LXML_VERSION)),
        "nginx": _cmd_version([nginx, "-v"]) if nginx else "not installed",
        "wget": _cmd_version(["wget", "--version"]),
        "webspider": f"{project} @ {commit}",
    }


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


# --- command line ----------------------------------------------------------------


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark webspider against plain Scrapy, wget and HTTrack.",
    )
    p.add_argument("--runs", type=int, help="rounds per site (default 3, --quick 1)")
    p.add_argument(
        "--sites",
        type=_csv,
        default=["docs", "synthetic", "latency"],
        help="comma-separated: docs,synthetic,latency,onepage,pgdocs"
        " (default docs,synthetic,latency)",
    )
    p.add_argument(
        "--contenders",
        type=_csv,
        default=list(DEFAULT_CONTENDERS),
        help="comma-separated from: "
        + ",".join(contenders_mod.CONTENDERS)
        + " (default webspider,baseline,wget; httrack is opt-in, "
        "see bench/README.md)",
    )
    p.add_argument(
        "--benchmarks",
        type=_csv,
        default=list(BENCHMARKS),
        help="comma-separated from: " + ",".join(BENCHMARKS),
    )
    p.add_argument(
        "--quick", action="store_true", help="1 round and a 2,000 x 100 synthetic site"
    )
    p.add_argument("--synthetic-pages", type=int, help="default 20000 (--quick 2000)")
    p.add_argument("--synthetic-links", type=int, help="default 200 (--quick 100)")
    p.add_argument("--latency-ms", type=float, default=50.0)
    p.add_argument(
        "--timeout",
        type=float,
        default=1200.0,
        help="seconds before a run is killed (default 1200)",
    )
    p.add_argument(
        "--project",
        type=Path,
        default=DEFAULT_PROJECT,
        help="webspider checkout to benchmark (default: this one)",
    )
    p.add_argument(
        "--checkout",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="another webspider checkout; contender webspider@LABEL runs it"
        " (repeatable), e.g. --checkout before=/tmp/old"
        " --contenders webspider,webspider@before",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=HERE / "results",
        help="where latest.{md,json,png} go",
    )
    p.add_argument("--name", default="latest", help="results file stem")
    p.add_argument(
        "--keep-logs", action="store_true", help="copy each run's log to <out>/logs/"
    )
    p.add_argument("--no-chart", action="store_true")
    args = p.parse_args(argv)
    args.runs = args.runs or (1 if args.quick else 3)
    args.synthetic_pages = args.synthetic_pages or (2000 if args.quick else 20000)
    args.synthetic_links = args.synthetic_links or (100 if args.quick else 200)
    args.project = args.project.resolve()
    args.checkouts = {}
    for spec in args.checkout:
        label, sep, path = spec.partition("=")
        if not sep or not label or not (Path(path) / "webspider").is_dir():
            p.error(f"--checkout wants LABEL=PATH of a checkout, got {spec!r}")
        args.checkouts[label] = Path(path).resolve()
    for name in args.contenders:
        base, at, label = name.partition("@")
        if base not in contenders_mod.CONTENDERS:
            p.error(f"unknown contender {name!r}")
        if at and label not in args.checkouts:
            p.error(f"contender {name!r} needs --checkout {label}=PATH")
    for name in args.sites:
        if name not in ("docs", "synthetic", "latency", "onepage"):
            p.error(f"unknown site {name!r}")
    for name in args.benchmarks:
        if name not in BENCHMARKS:
            p.error(f"unknown benchmark {name!r}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # An installed package has its bytecode (pip compiles it); a checkout on a
    # machine with PYTHONDONTWRITEBYTECODE set would compile webspider's
    # modules from source in every run (~60 ms, twice with the page worker).
    for project in (args.project, *args.checkouts.values()):
        compileall.compile_dir(project / "webspider", quiet=1)
    started = time.time()
    load_start = _loadavg()
    measurements: list[Measurement] = []
    for name in args.benchmarks:
        measurements.extend(BENCHMARKS[name](args))
    if not measurements:
        print("bench: nothing was measured", file=sys.stderr)
        return 1
    info = machine_info(args.project)
    for label, project in args.checkouts.items():
        git = ["git", "-C", str(project), "log", "-1", "--format=%h %s"]
        info[f"webspider@{label}"] = f"{project} @ {_cmd_version(git)}"
    info["command"] = "python bench/run.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    info["duration"] = f"{time.time() - started:.0f} s"
    # Other work on the machine skews the numbers; say how busy it was.
    info["load average at start / end"] = f"{load_start} / {_loadavg()}"
    info["synthetic"] = f"{args.synthetic_pages} pages x {args.synthetic_links} links"
    info["latency"] = f"{args.latency_ms:g} ms"
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [asdict(m) | {"cpu_s": m.cpu_s} for m in measurements]
    summary = report.summarize(rows)
    md = report.markdown(summary, info)
    (args.out / f"{args.name}.md").write_text(md)
    report.write_json(args.out / f"{args.name}.json", info, summary, rows)
    if not args.no_chart:
        report.chart(args.out / f"{args.name}.png", summary, info)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
