"""Benchmark helper (not a test): the same crawl by two webspider trees, compared.

    python bench/tree_parity.py --sites docs --project $PWD --other <a checkout>

Serves each site with nginx on loopback (bench/sites.py), crawls it with
``scrapy crawl webspider`` (default features: the mirror on) once with each
tree, and compares what the crawls wrote: ``pages.jsonl`` and
``broken-links.jsonl`` as bench/client_parity.py does (``fetched_at``,
``referer`` and the referrers listed left out: timing), every file of the
mirror folder byte for byte, the mirror's ``changes.jsonl`` and
``mirror-state.jsonl`` line for line (sorted: pages are stored in the order
they arrive; the output folder's own path made the same), and the pages'
count. Prints one line a site and each difference; exit status 1 if any.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from client_parity import compare_outputs, each_site, report, site_arguments  # noqa: E402


def crawl(url: str, out: Path, project: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(project)
    argv = [sys.executable, "-m", "scrapy", "crawl", "webspider"]
    argv += ["-a", f"url={url}", "-a", f"output={out}", "-s", "WEBSPIDER_PROGRESS=off"]
    proc = subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode:
        raise SystemExit(f"{project}: exit {proc.returncode}\n{proc.stderr[-3000:]}")


def mirror(out: Path) -> dict[str, bytes]:
    root = out / "mirror"
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def records(out: Path, name: str) -> list[str]:
    """The lines of the mirror's record file ``name``, sorted, the output
    folder's path (in ``mirror_root``) written as ``<out>``."""
    text = (out / name).read_text(encoding="utf-8")
    return sorted(text.replace(str(out), "<out>").splitlines())


def main() -> int:
    parser = site_arguments(__doc__.splitlines()[0], "docs")
    parser.add_argument("--other", type=Path, required=True)
    args = parser.parse_args()
    differ = False
    for name, url, tmp in each_site(args):
        trees = {"this": args.project, "other": args.other}
        outs = {label: tmp / label for label in trees}
        for label, tree in trees.items():
            crawl(url, outs[label], tree)
        a, notes = compare_outputs(outs["this"], outs["other"])
        ma, mb = mirror(outs["this"]), mirror(outs["other"])
        if ma != mb:
            names = sorted(set(ma) ^ set(mb))[:5]
            changed = sorted(k for k in set(ma) & set(mb) if ma[k] != mb[k])[:5]
            notes.append(f"mirror differs: only one side {names}, bytes {changed}")
        for file in ("changes.jsonl", "mirror-state.jsonl"):
            ra, rb = records(outs["this"], file), records(outs["other"], file)
            if ra != rb:
                diff = [(x, y) for x, y in zip(ra, rb, strict=False) if x != y]
                notes.append(f"{file} differs ({len(ra)} / {len(rb)}): {diff[:2]}")
        summary = (
            f"{name}: {len(a)} pages, {len(ma)} mirror files, "
            f"{sum(map(len, ma.values()))} bytes"
        )
        differ = report(summary, notes) or differ
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
