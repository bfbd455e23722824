"""Run ``scrapy crawl webspider`` as a user would: a subprocess in the project."""

from __future__ import annotations

import os
import subprocess
import sys
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


def scrapy_command(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "webspider",
        "-s",
        f"TWISTED_DNS_RESOLVER={RESOLVER}",
        *args,
    ]


def run_crawl(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        scrapy_command(*args),
        cwd=ROOT,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
