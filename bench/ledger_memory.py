"""Benchmark (not a test): memory of a crawl of a site full of broken links.

    python bench/ledger_memory.py                          # this checkout
    python bench/ledger_memory.py --project /work/main     # another one

Generates (once, under --workdir) a site of --pages small pages; page *i*
links to the next one, to 20 pages ahead of it, to --shared of the
--shared-targets 404 URLs every page shares (``/gone/s<j>.html``, each
linked from pages/shared-targets*shared pages) and to --own 404 URLs of its
own (``/gone/<i>-<k>.html``). Serves it with nginx (bench/sites.py), crawls
it with ``scrapy crawl webspider -a mirror=0`` and reports the peak RSS of
the crawl's processes (sampled, bench/run.py's TreeRss, and the kernel's
ru_maxrss), wall time, pages and broken links found, and the crawl state's
size on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import contenders  # noqa: E402
import sites  # noqa: E402
from run import TreeRss  # noqa: E402


def generate(
    root: Path, pages: int, shared_targets: int, shared: int, own: int
) -> None:
    marker = root / ".complete"
    if marker.exists():
        return
    for i in range(pages):
        links = [f"/p/{j}.html" for j in range(i + 1, min(pages, i + 21))]
        links += [f"/gone/s{(i + k) % shared_targets}.html" for k in range(shared)]
        links += [f"/gone/{i}-{k}.html" for k in range(own)]
        body = "".join(f'<a href="{u}">link {n}</a>\n' for n, u in enumerate(links))
        path = root / "p" / f"{i}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"<html><head><title>{i}</title></head><body>{body}</body></html>"
        )
    (root / "index.html").write_text('<a href="/p/0.html">start</a>')
    marker.touch()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pages", type=int, default=20000)
    p.add_argument("--shared-targets", type=int, default=50)
    p.add_argument("--shared", type=int, default=3)
    p.add_argument("--own", type=int, default=2)
    p.add_argument("--project", type=Path, default=HERE.parent)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-ledger-bench"))
    args = p.parse_args()
    root = (
        args.workdir
        / f"site-{args.pages}-{args.shared_targets}-{args.shared}-{args.own}"
    )
    generate(root, args.pages, args.shared_targets, args.shared, args.own)
    with (
        sites.static_server(root) as (port, _log),
        tempfile.TemporaryDirectory() as tmp,
    ):
        url = f"http://127.0.0.1:{port}/"
        command = contenders.webspider(url, Path(tmp), args.project.resolve())
        argv = [*command.argv, "-a", "mirror=0", "-s", "WEBSPIDER_PROGRESS=off"]
        started = time.perf_counter()
        with open(Path(tmp) / "log", "wb") as log:
            proc = subprocess.Popen(
                argv,
                cwd=command.cwd,
                env=command.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        sampler = TreeRss(proc.pid)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        sampler.stop()
        out = Path(tmp) / "out"
        summary = json.loads((out / "summary.json").read_text())
        state = sum(f.stat().st_size for f in out.glob(".webspider-state.sqlite3*"))
        print(json.dumps({
            "project": str(args.project),
            "exit": os.waitstatus_to_exitcode(status),
            "pages": summary["pages"],
            "broken": summary["broken"]["total"],
            "wall_s": round(wall, 1),
            "peak_rss_mib_sampled": round(sampler.peak_kib / 1024, 1),
            "peak_rss_mib_maxrss": round(usage.ru_maxrss / 1024, 1),
            "state_mib": round(state / 2**20, 1),
        }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
