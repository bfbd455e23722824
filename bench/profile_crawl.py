"""Profile one webspider crawl with cProfile and print the hot spots.

    python bench/profile_crawl.py --site docs [--top 40] [--project PATH]
    python bench/profile_crawl.py --site synthetic --synthetic-pages 2000 \
        --synthetic-links 100
    python bench/profile_crawl.py --site folder --root SITE -a mirror=0

Serves the site as bench/run.py does, runs ``python -m cProfile -o
bench/results/profile-<site>.prof -m scrapy crawl webspider ...`` from the
project root, then prints the top functions by cumulative and by own time.
Open the .prof file with ``python -m pstats`` or snakeviz for more.
``--site folder --root DIR`` serves a folder already generated (e.g. a
bench/scale synthetic site) with nginx; ``-a NAME=VALUE`` passes spider
arguments (``-a mirror=0``).
"""

from __future__ import annotations

import argparse
import io
import pstats
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import contenders  # noqa: E402
import sites  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator


class _Folder:
    def __init__(self, port: int, access: Any) -> None:
        self.url = f"http://127.0.0.1:{port}/"
        self._access = access

    def mark(self) -> None:
        self._access.mark()

    def requests(self) -> list[Any]:
        return list(self._access.read())


@contextmanager
def _folder(root: Path) -> Iterator[_Folder]:
    with sites.static_server(root) as (port, access):
        yield _Folder(port, access)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--site", choices=("docs", "synthetic", "latency", "folder"), default="docs"
    )
    p.add_argument("--root", type=Path, help="the folder served by --site folder")
    p.add_argument("--synthetic-pages", type=int, default=2000)
    p.add_argument("--synthetic-links", type=int, default=100)
    p.add_argument("--project", type=Path, default=HERE.parent)
    p.add_argument("--top", type=int, default=35)
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra Scrapy setting for the crawl (repeatable)",
    )
    p.add_argument(
        "-a",
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra spider argument, e.g. mirror=0 (repeatable)",
    )
    args = p.parse_args()
    factory = {
        "docs": sites.docs_site,
        "latency": sites.latency_site,
        "synthetic": lambda: sites.synthetic_site(
            args.synthetic_pages, args.synthetic_links
        ),
        "folder": lambda: _folder(args.root),
    }[args.site]
    if args.site == "folder" and args.root is None:
        p.error("--site folder needs --root")
    args.out.mkdir(parents=True, exist_ok=True)
    prof = args.out / f"profile-{args.site}.prof"
    with factory() as site, tempfile.TemporaryDirectory() as tmp:
        cmd = contenders.webspider(site.url, Path(tmp), args.project.resolve())
        argv = [sys.executable, "-m", "cProfile", "-o", str(prof), *cmd.argv[1:]]
        for setting in args.set:
            argv += ["-s", setting]
        for arg in args.arg:
            argv += ["-a", arg]
        site.mark()
        start = time.perf_counter()
        subprocess.run(
            argv,
            cwd=cmd.cwd,
            env=cmd.env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - start
        served = len(site.requests())
    out = io.StringIO()
    stats = pstats.Stats(str(prof), stream=out)
    stats.strip_dirs()
    print(
        f"# {args.site} {' '.join(args.set + args.arg)}: {served} requests served, "
        f"{wall:.2f}s wall under cProfile"
    )
    for key in ("cumulative", "tottime"):
        out.seek(0)
        out.truncate()
        stats.sort_stats(key).print_stats(args.top)
        print(f"\n## by {key}\n")
        text = out.getvalue()
        print(text[text.find("   ncalls") :])
    print(f"profile: {prof}")


if __name__ == "__main__":
    main()
