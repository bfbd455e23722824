"""Small pages, side by side: where webspider stands against Scrapy's floor.

    python bench/smallpages.py                         # 3 rounds, both sites
    python bench/smallpages.py --runs 1 --sites synth --contenders webspider,floor
    python bench/smallpages.py --profile-only          # the component profile alone
    python bench/smallpages.py --pages 2000 -s WEBSPIDER_PAGE_WORKER=0

Sites (served by nginx on loopback, bench/sites.py):

* ``synth``: bench/scale/synth.py's site of ``--pages`` (default 10,000)
  pages of 2-4 KB with 20-50 links each, 300 links that 404;
* ``pgdocs``: PostgreSQL 15's HTML documentation (1,173 files, flat).

Contenders, in alternating order round after round:

* ``webspider``: ``scrapy crawl webspider``, default features (mirror on);
* ``nomirror``: the same with ``-a mirror=0``;
* ``baseline``: the plain Scrapy CrawlSpider (bench/baseline_spider.py);
* ``floor``: bench/floor_spider.py, which requests the list of every URL
  the site serves (its files; for ``synth`` also the 300 URLs that 404) and
  parses nothing: Scrapy's engine floor;
* ``wget``: ``wget --mirror``;
* ``floorstate`` (on demand): the floor spider over webspider's crash-safe
  scheduler and state (``SCHEDULER`` = StateScheduler) and nothing else.

Each run is a child process measured with ``os.wait4`` (wall, user + sys of
it and of every process it waited for, peak RSS of its tree); the CPU of
webspider's page worker is read from /proc while it runs (its last sample:
up to 0.1 s low), the crawl process's is the rest. Figures per page divide
by the distinct URLs the server answered 2xx. The table gives medians.

Then (unless ``--no-profile``) webspider runs once more per site and mode
under py-spy (``pip install py-spy``; both processes, 250 samples a second
while on a CPU), and the samples are summed per component: each sample goes
to the innermost frame whose file belongs to a component (a webspider
package, or a part of Scrapy or Twisted; time in the standard library and
in C goes to its caller's), the page worker's process to one row.
cProfile was tried first: its per-call cost (on the CPU clock) made the
crawl 5x slower and distorted the shares towards the many small calls.

Writes bench/results/smallpages.{md,json} and py-spy's raw samples.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE / "scale"))  # after bench/: scale/run.py is not run.py

import contenders  # noqa: E402
import sites  # noqa: E402
import synth  # noqa: E402
from run import TreeRss, _loadavg, machine_info, run_measured  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- sites ------------------------------------------------------------------------


@dataclass
class Served:
    site: sites.Site
    #: every URL the site serves, for the floor spider
    urls: list[str]


def _url_list(base: str, root: Path, extra: list[str]) -> list[str]:
    urls = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name.startswith("."):
            continue
        rel = path.relative_to(root).as_posix()
        urls.append(base + ("" if rel == "index.html" else rel))
    return urls + [base + e.lstrip("/") for e in extra]


@contextmanager
def synth_site(pages: int, workdir: Path) -> Iterator[Served]:
    root = synth.generate(workdir, pages)
    missing = int(synth.manifest(root)["missing"])  # type: ignore[call-overload]
    with sites.static_server(root) as (port, log):
        base = f"http://127.0.0.1:{port}/"
        site = sites.Site(
            "synth",
            base,
            f"bench/scale/synth.py, {pages:,} pages of 2-4 KB, 20-50 links",
            log.read,
            log.mark,
        )
        yield Served(
            site, _url_list(base, root, [f"gone/{j}.html" for j in range(missing)])
        )


@contextmanager
def pgdocs_site() -> Iterator[Served]:
    with sites.pgdocs_site() as site:
        yield Served(site, _url_list(site.url, sites.PGDOCS_ROOT, []))


# --- contenders -------------------------------------------------------------------


def _floor(workdir: Path, urls: list[str], project: Path) -> contenders.Command:
    """The floor spider, from the run's folder (no scrapy.cfg: Scrapy's
    defaults). The checkout is on its PYTHONPATH so that a variant can name
    a class of bench/ (``bench.leanhttp.LeanHTTPDownloadHandler``); the
    spider itself imports nothing of it."""
    url_file = workdir / "urls.txt"
    url_file.write_text("\n".join(urls) + "\n")
    return contenders.Command(
        [sys.executable, "-m", "scrapy", "runspider", str(HERE / "floor_spider.py"),
         "-a", f"urls={url_file}"],
        cwd=workdir,
        env=contenders._python_env(project),
    )  # fmt: skip


def _floor_state(workdir: Path, urls: list[str], project: Path) -> contenders.Command:
    """The floor spider over webspider's crash-safe scheduler and crawl state
    (``SCHEDULER`` = StateScheduler, its state in the run's folder) and
    nothing else of webspider: what the durable state alone adds a page."""
    cmd = _floor(workdir, urls, project)
    cmd.argv += ["-s", "SCHEDULER=webspider.frontier.scheduler.StateScheduler",
                 "-s", f"WEBSPIDER_OUTPUT={workdir / 'out'}"]  # fmt: skip
    return cmd


def make_command(
    name: str, served: Served, workdir: Path, args: argparse.Namespace
) -> contenders.Command | None:
    url = served.site.url
    if name.endswith("@before"):
        # the same contender on the checkout given by --before
        here = argparse.Namespace(**{**vars(args), "project": args.before})
        return make_command(name.removesuffix("@before"), served, workdir, here)
    if name in args.variants:
        base, settings = args.variants[name]
        cmd = make_command(base, served, workdir, args)
        if cmd is not None:
            for setting in settings:
                cmd.argv += ["-s", setting]
        return cmd
    if name == "floor":
        cmd = _floor(workdir, served.urls, args.project)
    elif name == "floorstate":
        cmd = _floor_state(workdir, served.urls, args.project)
    elif name == "nomirror":
        cmd = contenders.webspider(url, workdir, args.project)
        cmd.argv += ["-a", "mirror=0"]
    else:
        made = contenders.CONTENDERS[name](url, workdir, args.project)
        if made is None:
            return None
        cmd = made
    if name in ("webspider", "nomirror"):
        for setting in args.set:
            cmd.argv += ["-s", setting]
    if name in ("floor", "floorstate"):
        for setting in args.floor_set:
            cmd.argv += ["-s", setting]
    return cmd


class WorkerCpu(threading.Thread):
    """CPU seconds of the crawl's descendants that are not the crawl itself
    (webspider's page worker), from /proc every 0.1 s; the last value seen
    per process."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.tree = TreeRss(pid)
        self.root = pid
        self.ticks: dict[int, int] = {}
        #: of it, system CPU (the kernel's part: the mirror's file creations)
        self.sys_ticks: dict[int, int] = {}
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.1):
            for pid in self.tree._tree():
                if pid == self.root:
                    continue
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    self.ticks[pid] = int(fields[11]) + int(fields[12])
                    self.sys_ticks[pid] = int(fields[12])
                except (OSError, IndexError, ValueError):
                    continue

    def stop(self) -> float:
        self._done.set()
        self.join()
        return sum(self.ticks.values()) / CLK_TCK

    @property
    def sys_s(self) -> float:
        return sum(self.sys_ticks.values()) / CLK_TCK


@dataclass
class Run:
    site: str
    contender: str
    round: int
    wall_s: float
    cpu_s: float
    helper_cpu_s: float
    maxrss_mb: float
    exit_code: int
    timed_out: bool
    requests: int
    pages_ok: int
    #: the mirror's end-of-crawl fix-up, as its log line says (0: none)
    fixup_s: float = 0.0
    #: system CPU of all processes, and of the page worker (in the kernel:
    #: on this machine's journal-less ext4 a file's creation swings from
    #: 20 us to over 1 ms, see bench/README.md, worker17)
    sys_s: float = 0.0
    helper_sys_s: float = 0.0
    #: the asyncio event loop the crawl ran on, as its log says (the floor
    #: spider's "Event loop:" line, webspider's stats): "" when it does not
    event_loop: str = ""


#: webspider.mirror.store's line at the end of the fix-up
FIXUP_LINE = re.compile(rb"Mirror: links fixed up in \d+ pages in ([0-9.]+) s")
#: the floor spider's line at the start, webspider's stats key at the end
LOOP_LINE = re.compile(rb"Event loop: ([\w.]+)|'webspider/event_loop': '([\w.]+)'")


def measure(
    served: Served, name: str, rnd: int, args: argparse.Namespace
) -> Run | None:
    # Each run's output (its mirror: 4,000-10,000 files) is kept until the
    # benchmark ends (``--clean-each-run``: deleted after the run): deleted
    # at once, its files' inodes are "recently deleted" for the next minutes,
    # and on this machine's journal-less ext4 every file the next runs create
    # nearby scans past them (the kernel's find_inode_bit, up to ~1 ms a
    # file: bench/README.md, worker17)
    with contextlib.ExitStack() as cleanup:
        if args.runs_dir is None:
            workdir = Path(
                cleanup.enter_context(
                    tempfile.TemporaryDirectory(prefix=f"webspider-small-{name}-")
                )
            )
        else:
            workdir = Path(
                tempfile.mkdtemp(prefix=f"{name}-r{rnd + 1}-", dir=args.runs_dir)
            )
        cmd = make_command(name, served, workdir, args)
        if cmd is None:
            return None
        served.site.mark()
        watch: list[WorkerCpu] = []

        def on_start(pid: int) -> None:
            watch.append(WorkerCpu(pid))
            watch[0].start()

        wall, rusage, code, timed_out, peak_kib = run_measured(
            cmd.argv, cmd.cwd, cmd.env or None, workdir / "crawl.log", args.timeout,
            on_start=on_start,
        )  # fmt: skip
        helper = watch[0].stop() if watch else 0.0
        helper_sys = watch[0].sys_s if watch else 0.0
        time.sleep(0.05)
        log = (workdir / "crawl.log").read_bytes()
        log_tail = log[-1500:].decode(errors="replace")
        fixup = FIXUP_LINE.search(log)
        loop = LOOP_LINE.search(log)
    served_reqs = served.site.requests()
    ok = {r.path for r in served_reqs if r.method == "GET" and 200 <= r.status < 300}
    if code not in (0, 8) or timed_out:
        print(f"bench: {name} exited {code}:\n{log_tail}", file=sys.stderr)
    run = Run(
        served.site.name,
        name,
        rnd,
        round(wall, 3),
        round(rusage.ru_utime + rusage.ru_stime, 3),
        round(helper, 2),
        round(peak_kib / 1024, 1),
        code,
        timed_out,
        len(served_reqs),
        len(ok),
        float(fixup.group(1)) if fixup else 0.0,
        round(rusage.ru_stime, 3),
        round(helper_sys, 2),
        (loop.group(1) or loop.group(2)).decode() if loop else "",
    )
    print(
        f"   {run.site} r{rnd + 1} {name:<10} wall {run.wall_s:7.2f}s cpu "
        f"{run.cpu_s:7.2f}s (sys {run.sys_s:5.2f}; worker {run.helper_cpu_s:5.2f}, "
        f"sys {run.helper_sys_s:4.2f}) "
        f"fix-up {run.fixup_s:4.2f}s "
        f"rss {run.maxrss_mb:5.0f}MB "
        f"2xx {run.pages_ok} requests {run.requests} "
        f"loop {run.event_loop or '?'}",
        file=sys.stderr,
    )
    return run


# --- profile ----------------------------------------------------------------------

#: (substring of the file name, component); the first that matches wins
ENGINE = "engine, reactor (Scrapy, Twisted, asyncio)"
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("/webspider/pageworker/", "page worker round trip (client side)"),
    ("/webspider/mirror/", "mirror (state, store, pipeline)"),
    ("/webspider/reports/", "reports"),
    ("/webspider/frontier/", "scheduler/store (webspider.frontier)"),
    ("/webspider/records.py", "scheduler/store (webspider.frontier)"),
    ("/webspider/politeness/", "politeness (robots, slots)"),
    ("/webspider/page/", "page (scan, links)"),
    ("/webspider/spiders/", "spider callback"),
    ("/webspider/scope/", "scope"),
    ("/webspider/directives/", "directives"),
    ("/webspider/addresses/", "addresses"),
    ("/webspider/credentials/", "credentials"),
    ("/webspider/bounds/", "bounds"),
    ("/webspider/", "webspider other (requests, url, config)"),
    ("/scrapy/core/downloader/handlers/", "download (HTTP client)"),
    ("/scrapy/core/downloader/contextfactory", "download (HTTP client)"),
    ("/scrapy/core/http2/", "download (HTTP client)"),
    ("/twisted/web/", "download (HTTP client)"),
    ("/twisted/internet/tcp.py", "download (HTTP client)"),
    ("/twisted/internet/abstract.py", "download (HTTP client)"),
    ("/twisted/internet/endpoints.py", "download (HTTP client)"),
    ("/twisted/protocols/", "download (HTTP client)"),
    ("/twisted/internet/protocol.py", "download (HTTP client)"),
    ("/twisted/internet/_newtls.py", "download (HTTP client)"),
    ("/aiohttp/", "download (HTTP client)"),
    ("/httpx/", "download (HTTP client)"),
    ("/httpcore/", "download (HTTP client)"),
    ("/h11/", "download (HTTP client)"),
    ("/scrapy/core/scheduler.py", "scheduler (Scrapy)"),
    ("/scrapy/dupefilters.py", "scheduler (Scrapy)"),
    ("/scrapy/pqueues.py", "scheduler (Scrapy)"),
    ("/queuelib/", "scheduler (Scrapy)"),
    ("/scrapy/downloadermiddlewares/", "downloader middlewares (Scrapy)"),
    ("/scrapy/core/downloader/middleware.py", "downloader middlewares (Scrapy)"),
    ("/scrapy/spidermiddlewares/", "spider middlewares (Scrapy)"),
    ("/scrapy/core/spidermw.py", "spider middlewares (Scrapy)"),
    ("/scrapy/utils/python.py", "spider middlewares (Scrapy)"),
    ("/scrapy/utils/asyncgen.py", "spider middlewares (Scrapy)"),
    ("/scrapy/exporters.py", "export"),
    ("/scrapy/extensions/feedexport.py", "export"),
    ("/scrapy/core/scraper.py", "scraper, pipelines (Scrapy)"),
    ("/scrapy/pipelines/", "scraper, pipelines (Scrapy)"),
    ("/scrapy/http/", "Request/Response objects (Scrapy)"),
    ("/scrapy/utils/url.py", "Request/Response objects (Scrapy)"),
    ("/w3lib/", "Request/Response objects (Scrapy)"),
    ("/scrapy/utils/log.py", "logging"),
    ("/logging/", "logging"),
    ("/scrapy/signalmanager.py", "signals"),
    ("/scrapy/utils/signal.py", "signals"),
    ("/pydispatch/", "signals"),
    ("/scrapy/core/engine.py", ENGINE),
    (
        "/scrapy/core/downloader/__init__.py",
        "engine, reactor (Scrapy, Twisted, asyncio)",
    ),
    ("/scrapy/utils/defer.py", ENGINE),
    ("/scrapy/utils/asyncio.py", ENGINE),
    ("/scrapy/utils/reactor.py", ENGINE),
    ("/twisted/internet/", ENGINE),
    ("/twisted/python/", ENGINE),
    ("/asyncio/", ENGINE),
    ("/scrapy/", "Scrapy other"),
    ("<frozen importlib", "imports (start-up)"),
)


def _component(filename: str) -> str | None:
    for needle, name in COMPONENTS:
        if needle in filename:
            return name
    return None


WORKER = "the page worker process (all of it)"
IDLE = ("Condition.wait (", "Event.wait (", "select (", "poll (")
#: a thread pool's thread waiting for work (its queue's ``get``, in C, so
#: ``_worker`` is the innermost Python frame): PagesFile's fsync thread
#: between two commits, 4-5 % of a crawl's samples counted as work before
IDLE_POOL = "_worker (concurrent/futures/thread.py:"
#: webspider frames that own nothing below them: the command wraps the whole
#: crawl, the address guard is the download handler itself
NOT_OWNERS = ("/webspider/commands/", "/webspider/addresses/handler.py")


def _file(frame: str) -> str:
    """``func (scrapy/core/engine.py:123)`` -> ``/scrapy/core/engine.py:123``"""
    return "/" + frame[frame.rfind("(") + 1 :]


def owner(frames: list[str]) -> str:
    """The component a sample is charged to: the innermost webspider frame's
    (a feature pays for the Scrapy code it calls: the Requests it builds,
    the stats it counts, the pipe writes of the page worker), else the
    innermost frame that belongs to a component (time in the standard
    library and in C goes to its caller)."""
    if any("webspider.pageworker.worker" in f for f in frames[:2]):
        return WORKER
    files = [_file(f) for f in frames]
    for path in reversed(files):
        if "/webspider/" in path and not any(n in path for n in NOT_OWNERS):
            return _component(path) or "webspider other (requests, url, config)"
    for path in reversed(files):
        name = _component(path)
        if name is not None:
            return name
    return "other (interpreter, stdlib only)"


def busy_samples(raw: Path) -> Iterator[tuple[list[str], int]]:
    """py-spy's raw output (``frames count`` a line, outermost frame first)
    as (frames, count), the threads waiting (a condition, select, a thread
    pool's empty queue) left out: py-spy does not always see them idle."""
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = stack.split(";")
        if frames[-1].startswith(IDLE) or frames[-1].startswith(IDLE_POOL):
            continue
        yield frames, int(n)


def components(raw: Path) -> tuple[dict[str, int], int]:
    """Samples per component (see ``owner``) from py-spy's raw output
    (``frames count`` a line, outermost frame first), and their total.
    Threads waiting (a condition, select, a thread pool's empty queue) are
    left out: py-spy does not always see them idle."""
    counts: dict[str, int] = {}
    total = 0
    for frames, n in busy_samples(raw):
        name = owner(frames)
        total += n
        counts[name] = counts.get(name, 0) + n
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])), total


class WorkerProfiles(threading.Thread):
    """py-spy attached to each page worker the crawl starts, as it starts.

    ``py-spy record --subprocesses`` sometimes never samples the worker (0
    of 2,881 samples on pgdocs, 2026-12-03): a py-spy of its own per worker
    does. Their raw stacks go into the crawl's file, each line under a
    ``process PID:"webspider.pageworker.worker"`` frame, as
    ``--subprocesses`` writes them."""

    def __init__(self, root: int, raw: Path) -> None:
        super().__init__(daemon=True)
        self.tree = TreeRss(root)
        self.raw = raw
        self.spies: dict[int, tuple[subprocess.Popen[bytes], Path]] = {}
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.02):
            for pid in self.tree._tree():
                if pid in self.spies:
                    continue
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"webspider.pageworker.worker" not in cmdline:
                    continue
                out = self.raw.with_name(f"{self.raw.name}.worker-{pid}")
                spy = subprocess.Popen(
                    ["py-spy", "record", "-r", "250", "-f", "raw",
                     "--pid", str(pid), "-o", str(out)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
                self.spies[pid] = (spy, out)

    def stop(self) -> None:
        """Wait for each worker's py-spy (it ends with its worker) and
        append its stacks to the crawl's file."""
        self._done.set()
        self.join()
        with self.raw.open("a") as merged:
            for pid, (spy, out) in self.spies.items():
                try:
                    spy.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    spy.terminate()
                    spy.wait()
                if not out.exists():
                    continue
                head = f'process {pid}:"webspider.pageworker.worker";'
                for line in out.read_text(errors="replace").splitlines():
                    if line:
                        merged.write(head + line + "\n")
                out.unlink()


def profile_run(served: Served, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One crawl under py-spy (250 samples a second while on a CPU: the
    crawl's process, and its page worker by ``WorkerProfiles``); the shares
    of its samples, scaled to the CPU time the crawl's processes used
    (os.wait4)."""
    raw = args.out / f"{args.name}-{served.site.name}-{mode}.pyspy.txt"
    with tempfile.TemporaryDirectory(prefix="webspider-small-prof-") as tmp:
        cmd = make_command(mode, served, Path(tmp), args)
        assert cmd is not None
        argv = ["py-spy", "record", "-r", "250", "-f", "raw",
                "-o", str(raw), "--", *cmd.argv]  # fmt: skip
        served.site.mark()
        proc = subprocess.Popen(
            argv, cwd=cmd.cwd, env=cmd.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        workers = WorkerProfiles(proc.pid, raw)
        workers.start()
        _pid, _status, rusage = os.wait4(proc.pid, 0)
        workers.stop()
        time.sleep(0.05)
    cpu = rusage.ru_utime + rusage.ru_stime  # py-spy's own CPU included
    served_reqs = served.site.requests()
    pages = len(
        {r.path for r in served_reqs if r.method == "GET" and 200 <= r.status < 300}
    )
    counts, total = components(raw)
    print(
        f"   profile {served.site.name} {mode}: {total} samples, {pages} pages",
        file=sys.stderr,
    )
    return {"site": served.site.name, "mode": mode, "pages": pages,
            "samples": total, "components": counts, "raw": str(raw),
            "cpu_s_with_pyspy": round(cpu, 2)}  # fmt: skip


# --- report -----------------------------------------------------------------------


def summarize(runs: list[Run]) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.site, r.contender), []).append(r)
    for (site, name), rs in groups.items():
        med = {
            k: statistics.median(getattr(r, k) for r in rs)
            for k in (
                "wall_s",
                "cpu_s",
                "helper_cpu_s",
                "maxrss_mb",
                "pages_ok",
                "requests",
                "fixup_s",
                "sys_s",
                "helper_sys_s",
            )
        }
        med["cpu_ms_page"] = statistics.median(
            1000 * r.cpu_s / r.pages_ok for r in rs if r.pages_ok
        ) if any(r.pages_ok for r in rs) else 0.0  # fmt: skip
        med["wall_ms_page"] = statistics.median(
            1000 * r.wall_s / r.pages_ok for r in rs if r.pages_ok
        ) if any(r.pages_ok for r in rs) else 0.0  # fmt: skip
        med["runs"] = len(rs)
        out.setdefault(site, {})[name] = med
    return out


def per_round(runs: list[Run], site: str) -> list[str]:
    """Each contender's wall and crawl-process CPU (all processes but the
    page worker) over the floor's of the same round, round by round: the
    machine's speed moves between rounds more than the contenders differ."""
    floors = {r.round: r for r in runs if r.site == site and r.contender == "floor"}
    if not floors:
        return []
    lines = [
        "Over the same round's floor (wall; the crawl's process CPU, all "
        "processes but the page worker), round by round, and the medians:",
        "",
        "| contender | wall / floor | median | crawl process CPU / floor | median "
        "| crawl process CPU ms/page, median |",
        "|---|---|--:|---|--:|--:|",
    ]
    names: list[str] = []
    for r in runs:
        if r.site == site and r.contender not in names:
            names.append(r.contender)
    for name in names:
        rs = [r for r in runs if r.site == site and r.contender == name]
        pairs = [(r, floors[r.round]) for r in rs if r.round in floors]
        if not pairs:
            continue
        walls = [r.wall_s / f.wall_s for r, f in pairs]
        cpus = [(r.cpu_s - r.helper_cpu_s) / f.cpu_s for r, f in pairs]
        per_page = statistics.median(
            1000 * (r.cpu_s - r.helper_cpu_s) / r.pages_ok for r in rs if r.pages_ok
        ) if any(r.pages_ok for r in rs) else 0.0  # fmt: skip
        lines.append(
            f"| {name} | {', '.join(f'{w:.2f}' for w in walls)} | "
            f"{statistics.median(walls):.2f} | "
            f"{', '.join(f'{c:.2f}' for c in cpus)} | "
            f"{statistics.median(cpus):.2f} | {per_page:.2f} |"
        )
    return [*lines, ""]


def markdown(
    summary: dict[str, dict[str, dict[str, float]]],
    profiles: list[dict[str, Any]],
    info: dict[str, str],
    runs: list[Run] | None = None,
) -> str:
    lines = [
        "# Small pages: webspider against Scrapy's floor, plain Scrapy and wget",
        "",
    ]
    for site, rows in summary.items():
        floor = rows.get("floor")
        lines += [
            f"## {site}",
            "",
            "| contender | wall s | CPU s (all processes) | of it page worker | "
            "system CPU s: all / page worker | "
            "CPU ms/page | wall ms/page | wall / floor | CPU / floor | "
            "peak RSS MB | pages 2xx | requests | mirror fix-up s | runs |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for name, m in rows.items():
            wf = f"{m['wall_s'] / floor['wall_s']:.2f}" if floor else ""
            cf = f"{m['cpu_s'] / floor['cpu_s']:.2f}" if floor else ""
            lines.append(
                f"| {name} | {m['wall_s']:.2f} | {m['cpu_s']:.2f} | "
                f"{m['helper_cpu_s']:.2f} | "
                f"{m.get('sys_s', 0):.2f} / {m.get('helper_sys_s', 0):.2f} | "
                f"{m['cpu_ms_page']:.2f} | "
                f"{m['wall_ms_page']:.2f} | {wf} | {cf} | {m['maxrss_mb']:.0f} | "
                f"{m['pages_ok']:.0f} | {m['requests']:.0f} | "
                f"{m['fixup_s']:.2f} | {m['runs']:.0f} |"
            )
        lines.append("")
        lines += per_round(runs or [], site)
    if profiles:
        lines += [
            "## Where webspider's CPU goes (py-spy, both processes)",
            "",
            "Share of the samples (250/s while on a CPU) of one crawl, and that"
            " share of the median CPU ms/page measured above for the same"
            " site and mode (start-up and shut-down included).",
            "",
        ]
        keys = [f"{p['site']} {p['mode']}" for p in profiles]
        comps: list[str] = []
        for p in profiles:
            comps += [c for c in p["components"] if c not in comps]
        lines.append("| component | " + " | ".join(keys) + " |")
        lines.append("|---|" + "--:|" * len(keys))
        for c in comps:
            cells = []
            for p in profiles:
                share = p["components"].get(c, 0) / p["samples"] if p["samples"] else 0
                ms = summary.get(p["site"], {}).get(p["mode"], {}).get("cpu_ms_page")
                per = f"{share * ms:.2f} ms, " if ms else ""
                cells.append(f"{per}{100 * share:.1f}%")
            lines.append(f"| {c} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Machine", ""]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    return "\n".join(lines) + "\n"


# --- main -------------------------------------------------------------------------


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


ALL_CONTENDERS = ("webspider", "nomirror", "baseline", "floor", "floorstate", "wget")


def _run_sites(
    args: argparse.Namespace,
    factories: dict[str, Callable[[], AbstractContextManager[Served]]],
    runs: list[Run],
    profiles: list[dict[str, Any]],
) -> None:
    """Every round of every site, and the profiles (main's loop)."""
    for site_name in args.sites:
        try:
            cm = factories[site_name]()
            served = cm.__enter__()
        except sites.SiteUnavailable as exc:
            print(f"bench: skipping {site_name}: {exc}", file=sys.stderr)
            continue
        try:
            print(f"== {site_name}: {served.site.description}", file=sys.stderr)
            names = [] if args.profile_only else list(args.contenders)
            for rnd in range(args.runs if names else 0):
                shift = rnd % len(names)
                for name in names[shift:] + names[:shift]:
                    run = measure(served, name, rnd, args)
                    if run is not None:
                        runs.append(run)
            if not args.no_profile:
                for mode in args.profile_modes:
                    profiles.append(profile_run(served, mode, args))
        finally:
            cm.__exit__(None, None, None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sites", type=_csv, default=["synth", "pgdocs"])
    p.add_argument(
        "--contenders",
        type=_csv,
        default=["webspider", "nomirror", "baseline", "floor", "wget"],
    )
    p.add_argument("--pages", type=int, default=10_000, help="synth site size")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-scale"))
    p.add_argument("--project", type=Path, default=HERE.parent)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--name", default="smallpages")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--profile-only", action="store_true")
    p.add_argument("--profile-modes", type=_csv, default=["webspider", "nomirror"])
    p.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Scrapy setting for webspider's crawls (repeatable)",
    )
    p.add_argument("--floor-set", action="append", default=[], metavar="NAME=VALUE",
                   help="Scrapy setting for the floor spider (repeatable)")  # fmt: skip
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=CONTENDER:SETTING[|SETTING…]",
        help="an extra contender: CONTENDER with these Scrapy settings, e.g. "
        '\'floor-aiohttp=floor:DOWNLOAD_HANDLERS={"http": "scrapy.core.'
        "downloader.handlers._aiohttp.AiohttpDownloadHandler\"}' (repeatable; "
        "list NAME in --contenders)",
    )
    p.add_argument(
        "--before",
        type=Path,
        help="another webspider checkout: contenders named NAME@before "
        "(webspider@before, nomirror@before) run it, for before/after runs",
    )
    p.add_argument(
        "--clean-each-run",
        action="store_true",
        help="delete each run's output (its mirror) as soon as it ends, as "
        "before 2026-12-03: the next runs' file creations then pay for it",
    )
    args = p.parse_args(argv)
    args.variants = {}
    for spec in args.variant:
        name, _, rest = spec.partition("=")
        base, _, settings = rest.partition(":")
        if base not in ALL_CONTENDERS or not settings:
            p.error(f"bad --variant {spec!r}")
        args.variants[name] = (base, settings.split("|"))
    args.project = args.project.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.contenders:
        base = name.removesuffix("@before") if args.before else name
        if base not in ALL_CONTENDERS and base not in args.variants:
            p.error(f"unknown contender {name!r}")
    factories: dict[str, Callable[[], AbstractContextManager[Served]]] = {
        "synth": lambda: synth_site(args.pages, args.workdir),
        "pgdocs": pgdocs_site,
    }
    compileall.compile_dir(args.project / "webspider", quiet=1)
    started, load_start = time.time(), _loadavg()
    runs: list[Run] = []
    profiles: list[dict[str, Any]] = []
    with contextlib.ExitStack() as keep_runs:
        args.runs_dir = None
        if not args.clean_each_run:
            args.runs_dir = Path(
                keep_runs.enter_context(
                    tempfile.TemporaryDirectory(prefix="webspider-small-runs-")
                )
            )
        _run_sites(args, factories, runs, profiles)
    info = machine_info(args.project)
    info["command"] = "python bench/smallpages.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    info["duration"] = f"{time.time() - started:.0f} s"
    info["load average at start / end"] = f"{load_start} / {_loadavg()}"
    summary = summarize(runs)
    md = markdown(summary, profiles, info, runs)
    (args.out / f"{args.name}.md").write_text(md)
    (args.out / f"{args.name}.json").write_text(
        json.dumps(
            {
                "info": info,
                "summary": summary,
                "profiles": profiles,
                "runs": [asdict(r) for r in runs],
            },
            indent=1,
        )
    )
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
