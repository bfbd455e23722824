"""Every page wget finds, webspider finds too: the two lists compared.

    python bench/compare_wget.py                       # docs and pgdocs
    python bench/compare_wget.py --sites docs --project /work/main

Serves each site as bench/run.py does (bench/sites.py: python3.11-doc,
postgresql-doc-15), runs wget and webspider once each (bench/contenders.py;
webspider with ``-a log_skipped=1``), and reads from nginx's access log the
GET paths each was answered 2xx. Prints, per site, how many each fetched,
the paths wget fetched and webspider did not (the bounds and trap rules of
README "Bounds and traps" must lose none of a real site's pages), and the
URLs webspider skipped, by reason. Exit status 1 when webspider missed a
path wget fetched.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import contenders as contenders_mod  # noqa: E402
import run as run_mod  # noqa: E402
import sites as sites_mod  # noqa: E402

SITES = {"docs": sites_mod.docs_site, "pgdocs": sites_mod.pgdocs_site}


def fetched(
    site: sites_mod.Site, command: contenders_mod.Command, log: Path
) -> tuple[set[str], float]:
    """The paths ``command`` was answered 2xx, and its wall time."""
    site.mark()
    wall, _, code, timed_out, _ = run_mod.run_measured(
        command.argv, command.cwd, command.env or None, log, timeout=1200
    )
    time.sleep(0.05)  # let nginx flush its last access-log lines
    if code not in (0, 8) or timed_out:  # wget exits 8 on any 404
        print(log.read_text(errors="replace")[-2000:], file=sys.stderr)
    served = site.requests()
    return {r.path for r in served if r.method == "GET" and 200 <= r.status < 300}, wall


def compare(name: str, project: Path) -> bool:
    with SITES[name]() as site, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "wget").mkdir()
        (work / "webspider").mkdir()
        wget = contenders_mod.wget(site.url, work / "wget", project)
        assert wget is not None, "wget is not installed"
        ours = contenders_mod.webspider(site.url, work / "webspider", project)
        ours.argv += ["-a", "log_skipped=1"]
        wget_paths, wget_wall = fetched(site, wget, work / "wget.log")
        our_paths, our_wall = fetched(site, ours, work / "webspider.log")
        skipped_file = work / "webspider" / "out" / "skipped.jsonl"
        reasons = Counter(
            json.loads(line)["reason"] for line in skipped_file.read_text().splitlines()
        )
        missed = sorted(wget_paths - our_paths)
        print(f"== {name}: {site.description}")
        print(f"   wget:      {len(wget_paths)} paths 2xx in {wget_wall:.1f} s")
        print(f"   webspider: {len(our_paths)} paths 2xx in {our_wall:.1f} s")
        print(f"   fetched by wget, not by webspider: {len(missed)}")
        for path in missed[:20]:
            print(f"     {path}")
        extra = sorted(our_paths - wget_paths)
        print(f"   fetched by webspider, not by wget: {len(extra)} {extra[:5]}")
        print(f"   skipped by webspider: {dict(sorted(reasons.items()))}")
        return not missed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sites", default="docs,pgdocs", help="docs,pgdocs")
    p.add_argument("--project", type=Path, default=HERE.parent)
    args = p.parse_args()
    ok = True
    for name in args.sites.split(","):
        try:
            ok = compare(name.strip(), args.project.resolve()) and ok
        except sites_mod.SiteUnavailable as exc:
            print(f"bench: skipping {name}: {exc}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
