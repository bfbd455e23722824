"""Run ``scrapy crawl webspider`` as a user would: a subprocess in the project."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.resolver import RESOLVER

ROOT = Path(__file__).resolve().parents[2]


def scrapy_env() -> dict[str, str]:
    env = dict(os.environ)
    # the checkout under test comes first, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), env.get("PYTHONPATH")) if p
    )
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    return env


#: settings every ``scrapy crawl`` of the tests gets (the http_client
#: fixture's choice of client)
CLIENT_ARGS: tuple[str, ...] = ()


def scrapy_command(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "webspider",
        "-s",
        f"TWISTED_DNS_RESOLVER={RESOLVER}",
        *CLIENT_ARGS,
        *args,
    ]


def run_combine(*args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy combine *args``, run to its end, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "combine", *args],
        cwd=ROOT,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def start_crawl(*args: str) -> subprocess.Popen[str]:
    """``scrapy crawl webspider *args`` started, its log (stdout and stderr
    together) on the returned process's stdout."""
    return subprocess.Popen(
        scrapy_command(*args),
        cwd=ROOT,
        env=scrapy_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def start_apart(
    argv: list[str], env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``argv`` (a ``scrapy`` command) started in the project, its stdout and
    stderr apart (a test of what a command prints on stderr); ``env`` added
    to the environment."""
    return subprocess.Popen(
        argv,
        cwd=ROOT,
        env={**scrapy_env(), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_crawl(
    *args: str,
    timeout: float = 120,
    preexec_fn: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl webspider *args`` to its end; ``preexec_fn`` runs in
    the child before it starts (a resource limit of its own, say)."""
    return subprocess.run(
        scrapy_command(*args),
        cwd=ROOT,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        preexec_fn=preexec_fn,
    )


@dataclass
class Measured:
    result: subprocess.CompletedProcess[str]
    #: the crawl's process at its largest (the kernel's ru_maxrss), bytes
    peak_rss: int
    #: the crawl's process and the page worker together, sampled, bytes
    peak_rss_all: int
    seconds: float


def run_crawl_measured(*args: str, logs: Path, timeout: float = 120) -> Measured:
    """``run_crawl``, measuring the memory of the crawl's processes (its
    output goes to files in ``logs``)."""
    logs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with (logs / "stdout").open("w") as out, (logs / "stderr").open("w") as err:
        process = subprocess.Popen(
            scrapy_command(*args), cwd=ROOT, env=scrapy_env(), stdout=out, stderr=err
        )
    peak_all = 0
    while True:
        # reaped here, not by Popen: wait4 gives the child's own peak
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > timeout:
            process.kill()
        peak_all = max(peak_all, sum(_rss(p) for p in _tree(process.pid)))
        time.sleep(0.02)
    process.returncode = os.waitstatus_to_exitcode(status)
    result = subprocess.CompletedProcess(
        process.args,
        process.returncode,
        (logs / "stdout").read_text(),
        (logs / "stderr").read_text(),
    )
    return Measured(
        result, usage.ru_maxrss * 1024, peak_all, time.monotonic() - started
    )


def _tree(pid: int) -> list[int]:
    pids = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    pids += _tree(int(child))
    except OSError:
        pass
    return pids


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
