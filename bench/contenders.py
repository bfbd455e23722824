"""The crawlers the benchmark compares, as command lines.

A contender is a function ``(url, workdir, project) -> Command | None``:
``workdir`` is an empty directory for its output, ``project`` the webspider
checkout to benchmark. None means "not available here" (the reason is
printed once). Add one by writing such a function and listing it in
CONTENDERS.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Command:
    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)


def _python_env(pythonpath: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    else:
        env.pop("PYTHONPATH", None)
    return env


def webspider(url: str, workdir: Path, project: Path) -> Command:
    """``scrapy crawl webspider`` from the project root, default features."""
    return Command(
        [sys.executable, "-m", "scrapy", "crawl", "webspider",
         "-a", f"start_urls={url}", "-a", f"output={workdir / 'out'}"],
        cwd=project,
        env=_python_env(project),
    )  # fmt: skip


def baseline(url: str, workdir: Path, project: Path) -> Command:
    """Plain Scrapy CrawlSpider (bench/baseline_spider.py), run outside the
    project so that webspider's settings are not picked up."""
    return Command(
        [sys.executable, "-m", "scrapy", "runspider",
         str(HERE / "baseline_spider.py"), "-a", f"start_url={url}",
         "-O", str(workdir / "items.jsonl")],
        cwd=workdir,
        env=_python_env(None),
    )  # fmt: skip


def wget(url: str, workdir: Path, project: Path) -> Command | None:
    exe = shutil.which("wget")
    if exe is None:
        return None
    return Command(
        [exe, "--mirror", "--no-parent", "--quiet", "-e", "robots=on",
         "-P", str(workdir / "mirror"), url],
        cwd=workdir,
    )  # fmt: skip


def httrack(url: str, workdir: Path, project: Path) -> Command | None:
    """HTTrack with its defaults (robots.txt obeyed, stay on the host), quiet."""
    exe = shutil.which("httrack")
    if exe is None:
        return None
    return Command([exe, url, "-O", str(workdir / "mirror"), "-q"], cwd=workdir)


CONTENDERS: dict[str, Callable[[str, Path, Path], Command | None]] = {
    "webspider": webspider,
    "baseline": baseline,
    "wget": wget,
    "httrack": httrack,
}

MISSING_HINT = {
    "wget": "apt-get install wget",
    "httrack": "apt-get install httrack",
}
