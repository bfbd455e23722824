"""Benchmark (a check of figures, not of speed): what "Skipped: depth" says
about a depth-capped crawl of python3.11-doc, against what nginx served.

    PYTHONPATH=. python bench/depth_skips.py --project /work/main --project .

For each --project (a webspider checkout), crawls python3.11-doc (served by
nginx on loopback, bench/sites.py) with ``-a max_depth=0 -a mirror=0 -a
log_skipped=1``, to the end and stopped by ``-a max_rounds=2``, and prints:
pages served, ``webspider/depth/deferred_count``, summary.json's ``skipped``
(depth part) and ``deferred_remaining``, skipped.jsonl's ``depth`` lines,
how many of those nginx served all the same (reported skipped, fetched), and
the URLs deferred.jsonl lists that nginx never served. Written to
bench/results/depth_skips.{md,json} with --write.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import contenders  # noqa: E402
from bench.sites import Site, docs_site  # noqa: E402

_STAT = re.compile(r"'(webspider/depth/deferred_count)': (\d+)")


def lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def run(url: str, project: Path, extra: list[str], site: Site) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="depth-skips-") as tmp:
        work = Path(tmp)
        base = contenders.webspider(url, work, project)
        argv = [
            *base.argv,
            *("-a", "max_depth=0", "-a", "mirror=0", "-a", "log_skipped=1"),
            *("-s", "WEBSPIDER_PROGRESS=off", "-s", "LOG_LEVEL=INFO"),
            *extra,
        ]
        site.mark()
        started = time.monotonic()
        done = subprocess.run(
            argv,
            cwd=base.cwd,
            env=base.env,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        served = {
            r.path for r in site.requests() if r.method == "GET" and r.status == 200
        }
        out = work / "out"
        summary = json.loads((out / "summary.json").read_text("utf-8"))
        depth = [
            urlsplit(str(s["url"])).path
            for s in lines(out / "skipped.jsonl")
            if s["reason"] == "depth"
        ]
        deferred = [urlsplit(str(d["url"])).path for d in lines(out / "deferred.jsonl")]
        stat = _STAT.search(done.stderr)
        return {
            "args": " ".join(extra) or "(to the end)",
            "seconds": round(seconds, 2),
            "served": len(served),
            "deferred_count": int(stat.group(2)) if stat else None,
            "skipped_total": summary["skipped"]["total"],
            "skipped_depth": summary["skipped"]["by_reason"].get("depth", 0),
            "deferred_remaining": summary["deferred_remaining"],
            "depth_lines": len(depth),
            "depth_lines_served": len(set(depth) & served),
            "deferred_jsonl": len(deferred),
            "deferred_jsonl_served": len(set(deferred) & served),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, action="append", required=True)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows = []
    with docs_site() as site:
        for extra in ([], ["-a", "max_rounds=2"]):
            for project in args.project:
                row = {"project": str(project), **run(site.url, project, extra, site)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    if args.write:
        results = HERE / "results"
        (results / "depth_skips.json").write_text(json.dumps(rows, indent=2) + "\n")
        keys = list(rows[0])
        table = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        table += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
        (results / "depth_skips.md").write_text(
            "# python3.11-doc, max_depth=0: depth skips against nginx's log\n\n"
            + "\n".join(table)
            + "\n"
        )


if __name__ == "__main__":
    main()
