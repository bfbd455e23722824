"""Benchmark helper (not a test): the same crawl with each HTTP client, compared.

    python bench/client_parity.py --sites synth,pgdocs,docs --project $PWD

Serves each site with nginx on loopback (bench/sites.py), crawls it with
``scrapy crawl webspider -a mirror=0`` once with ``WEBSPIDER_HTTP_CLIENT=twisted``
and once with ``lean``, and compares what the crawls wrote and counted:
``pages.jsonl`` (every field but ``fetched_at`` and ``referer``, which of
a page's referrers came first being timing; lines sorted by URL),
``broken-links.jsonl`` (but the referrers listed: the first ones found),
and Scrapy's download stats
(``downloader/response_*``, ``downloader/request_count``,
``downloader/exception_*``; ``request_bytes`` is left out: it counts the
Referer headers, timing again). Prints one line a site and
each difference; exit status 1 if any.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE / "scale"))

import sites  # noqa: E402
import synth  # noqa: E402

STATS = re.compile(r"Dumping Scrapy stats:\s*(\{.*?\})\n", re.S)
COMPARED = (
    "downloader/response",
    "downloader/request_count",
    "downloader/exception",
    "response_status_count",
)


@contextmanager
def served(name: str, workdir: Path, pages: int) -> Iterator[str]:
    """The site's base URL while nginx serves it."""
    if name == "synth":
        with sites.static_server(synth.generate(workdir, pages)) as (port, _):
            yield f"http://127.0.0.1:{port}/"
    elif name in ("pgdocs", "docs"):
        site = sites.pgdocs_site() if name == "pgdocs" else sites.docs_site()
        with site as found:
            yield found.url
    else:
        raise SystemExit(f"unknown site {name!r} (synth, pgdocs, docs)")


def site_arguments(description: str, sites: str) -> argparse.ArgumentParser:
    """The command line of the parity scripts (this one, tree_parity.py):
    ``--sites`` (default ``sites``), ``--pages``, ``--project``, ``--workdir``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sites", default=sites)
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--project", type=Path, default=Path.cwd())
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-parity"))
    return parser


def each_site(args: argparse.Namespace) -> Iterator[tuple[str, str, Path]]:
    """Each site of ``--sites`` while it is served: its name, its URL and a
    fresh folder for the crawls' outputs (removed after)."""
    for name in args.sites.split(","):
        with (
            served(name, args.workdir, args.pages) as url,
            tempfile.TemporaryDirectory() as tmp,
        ):
            yield name, url, Path(tmp)


def crawl(url: str, client: str, out: Path, project: Path) -> dict[str, object]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(project), env.get("PYTHONPATH")) if p
    )
    argv = [sys.executable, "-m", "scrapy", "crawl", "webspider"]
    argv += ["-a", f"url={url}", "-a", f"output={out}", "-a", "mirror=0"]
    argv += ["-s", f"WEBSPIDER_HTTP_CLIENT={client}", "-s", "WEBSPIDER_PROGRESS=off"]
    proc = subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, check=False
    )
    found = STATS.search(proc.stderr)
    if proc.returncode or not found:
        raise SystemExit(f"{client}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    text = re.sub(r"datetime\.datetime\([^)]*\)", "None", found.group(1))
    return ast.literal_eval(text)  # type: ignore[no-any-return]


def pages(out: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in (out / "pages.jsonl").open()]
    for line in lines:
        line.pop("fetched_at", None)
        # which of a page's referrers came first is timing
        line.pop("referer", None)
    return sorted(lines, key=lambda line: str(line["url"]))


def broken(out: Path) -> list[dict[str, object]]:
    path = out / "broken-links.jsonl"
    lines = [json.loads(line) for line in path.open()] if path.exists() else []
    for line in lines:
        # the referrers kept (at most WEBSPIDER_BROKEN_LINKS_MAX_REFERRERS)
        # are the first ones found: timing; their count is compared
        line.pop("referrers", None)
    return lines


def compare_outputs(one: Path, two: Path) -> tuple[list[dict[str, object]], list[str]]:
    """``pages.jsonl`` and ``broken-links.jsonl`` of two crawls' output
    folders compared (as ``pages`` and ``broken`` read them): the first
    one's pages, and a line for each file that differs."""
    notes = []
    a, b = pages(one), pages(two)
    if a != b:
        diff = [(x, y) for x, y in zip(a, b, strict=False) if x != y][:3]
        notes.append(f"pages.jsonl differs ({len(a)} / {len(b)} lines): {diff}")
    broken_a, broken_b = broken(one), broken(two)
    if broken_a != broken_b:
        notes.append(f"broken-links.jsonl differs: {broken_a[:3]} / {broken_b[:3]}")
    return a, notes


def report(summary: str, notes: list[str]) -> bool:
    """Print a site's line and its differences; whether there were any."""
    print(f"{summary}: " + ("the same" if not notes else f"{len(notes)} differences"))
    for note in notes:
        print("   ", note)
    return bool(notes)


def main() -> int:
    args = site_arguments(__doc__.splitlines()[0], "synth").parse_args()
    differ = False
    for name, url, tmp in each_site(args):
        outs = {c: tmp / c for c in ("twisted", "lean")}
        stats = {c: crawl(url, c, outs[c], args.project) for c in outs}
        a, notes = compare_outputs(outs["twisted"], outs["lean"])
        keys = sorted(k for s in stats.values() for k in s if k.startswith(COMPARED))
        for key in dict.fromkeys(keys):
            x, y = stats["twisted"].get(key), stats["lean"].get(key)
            if x != y:
                notes.append(f"{key}: twisted {x}, lean {y}")
        bytes_ = stats["twisted"].get("downloader/response_bytes")
        summary = (
            f"{name}: {len(a)} pages, {len(broken(outs['twisted']))} broken, "
            f"response_bytes {bytes_}"
        )
        differ = report(summary, notes) or differ
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
