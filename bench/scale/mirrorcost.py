"""The mirror's cost on the synthetic site: crawl-process CPU per page and the
crawl state's size while the crawl runs (issues 14 and 17).

    python bench/scale/mirrorcost.py                        # 10,000 pages, this tree
    python bench/scale/mirrorcost.py --project /tmp/before  # another tree
    python bench/scale/mirrorcost.py --profile              # with cProfile

Serves the synthetic site of bench/scale/synth.py (cached under --sitedir)
with nginx and crawls it once with ``scrapy crawl webspider`` (default
settings: the mirror on). While it runs: the crawl process's CPU time
(utime + stime from /proc, the page worker not included), the crawl
state's files (db + WAL) every 0.25 s, and a statebytes breakdown
(bench/scale/statebytes.py) of the running state when 25, 50 and 75 % of
the pages are written, and the fix-up's log lines. With ``--profile`` the
crawl runs under cProfile (slower: use it for where the time goes, not
for the CPU figure) and the mirror's functions are listed with their
cumulative time per page.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import contenders  # noqa: E402
import sites  # noqa: E402
import statebytes  # noqa: E402
import synth  # noqa: E402

STATE = ".webspider-state.sqlite3"
TICK = os.sysconf("SC_CLK_TCK")
#: the functions whose cumulative time per page is printed (--profile)
WATCH = (
    "process_item",
    "mirror",
    "prepare",
    "targets",
    "store",
    "written",
    "put",
    "put_pending",
    "flush",
    "gather",
    "fix_up_pages",
    "run",
    "commit",
)


def cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def lines(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return sum(
                chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 16), b"")
            )
    except OSError:
        return 0


def state_size(out: Path) -> int:
    return sum(state_files(out))


def state_files(out: Path) -> tuple[int, int]:
    """The state's database file and its WAL (with the shared memory)."""
    db = wal = 0
    for p in out.glob(STATE + "*"):
        if p.is_file() and not p.name.endswith(".lock"):
            try:
                size = p.stat().st_size
            except OSError:  # removed meanwhile
                continue
            if p.name == STATE:
                db = size
            else:
                wal += size
    return db, wal


def crawl(args: argparse.Namespace, url: str, out: Path) -> dict[str, Any]:
    command = contenders.webspider(url, out.parent, args.project.resolve())
    argv = [*command.argv]
    argv[argv.index(f"output={out.parent / 'out'}")] = f"output={out}"
    prof = args.workdir / "mirrorcost.prof"
    if args.profile:
        argv = [argv[0], "-m", "cProfile", "-o", str(prof), *argv[1:]]
    for setting in args.set:
        argv += ["-s", setting]
    if args.nomirror:
        argv += ["-a", "mirror=0"]
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=command.cwd,
        env=command.env,
        stdout=subprocess.DEVNULL,
        stderr=(args.workdir / "mirrorcost.log").open("wb"),
    )
    cpu = 0.0
    peak = peak_db = peak_wal = 0
    peak_at = 0
    snapshots: dict[int, Any] = {}
    marks = [int(args.pages * share) for share in (0.25, 0.5, 0.75)]
    while proc.poll() is None:
        now = cpu_seconds(proc.pid)
        if now is not None:
            cpu = now
        db, wal = state_files(out)
        size = db + wal
        written = lines(out / "pages.jsonl")
        if size > peak:
            peak, peak_at = size, written
        peak_db, peak_wal = max(peak_db, db), max(peak_wal, wal)
        if marks and written >= marks[0]:
            mark = marks.pop(0)
            try:
                snapshots[mark] = statebytes.breakdown(out / STATE)
                snapshots[mark]["pages"] = written
                if args.keep is not None:  # a copy to look into afterwards
                    args.keep.mkdir(parents=True, exist_ok=True)
                    into = args.keep / f"state-{mark}.sqlite3"
                    into.unlink(missing_ok=True)
                    statebytes.snapshot(out / STATE, into).close()
            except Exception as exc:  # a benchmark goes on
                snapshots[mark] = {"error": str(exc)}
        time.sleep(0.25)
    wall = time.perf_counter() - started
    summary = json.loads((out / "summary.json").read_text())
    pages = lines(out / "pages.jsonl")
    raw: dict[str, Any] = {
        "project": str(args.project),
        "exit": proc.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "pages": pages,
        "cpu_ms_per_page": round(1000 * cpu / max(pages, 1), 3),
        "peak_state_bytes": peak,
        "peak_at_pages": peak_at,
        "peak_db_bytes": peak_db,
        "peak_wal_bytes": peak_wal,
        "urls_seen": summary.get("urls_seen"),
        "snapshots": snapshots,
    }
    log = (args.workdir / "mirrorcost.log").read_text(errors="replace")
    raw["fix_up"] = [
        line.split("] ", 1)[-1]
        for line in log.splitlines()
        if "Mirror: fixing up" in line or "links fixed up" in line
    ]
    seen = raw["urls_seen"] or pages
    raw["peak_state_b_per_url"] = round(peak / max(seen, 1))
    if args.profile:
        raw["profile"] = watched(prof, pages)
    return raw


def watched(prof: Path, pages: int) -> list[tuple[str, float, float]]:
    stats = pstats.Stats(str(prof))
    out = []
    for (file, line, name), (_cc, _nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if "webspider/" in file and name in WATCH:
            where = file[file.rindex("webspider/") :]
            out.append(
                (
                    f"{where}:{line} {name}",
                    round(1e6 * ct / pages, 1),
                    round(1e6 * tt / pages, 1),
                )
            )
    out.sort(key=lambda row: -row[1])
    return out


def render(raw: dict[str, Any]) -> str:
    seen = raw["urls_seen"] or raw["pages"]
    text = [
        f"project {raw['project']}: exit {raw['exit']}, {raw['pages']} pages, "
        f"wall {raw['wall_s']} s, crawl-process CPU {raw['cpu_s']} s = "
        f"{raw['cpu_ms_per_page']} ms/page; peak state {raw['peak_state_bytes']:,} B "
        f"= {raw['peak_state_b_per_url']} B/URL (at {raw['peak_at_pages']} pages); "
        f"largest db file {raw['peak_db_bytes'] / seen:,.0f} B/URL, "
        f"largest WAL {raw['peak_wal_bytes'] / seen:,.0f} B/URL"
    ]
    text += [f"  {line}" for line in raw["fix_up"]]
    for mark, snap in raw["snapshots"].items():
        if "error" in snap:
            text.append(f"  at {mark}: {snap['error']}")
            continue
        files = sum(snap["files"].values())
        text.append(
            f"  at {snap['pages']} pages: files {files / seen:,.0f} B/URL "
            f"(WAL {snap['files'].get(STATE + '-wal', 0) / seen:,.0f}); "
            + ", ".join(
                f"{ns['name']} {(ns['key'] + ns['value']) / seen:,.0f} "
                f"({ns['rows']} rows)"
                for ns in snap["namespaces"]
                if ns["key"] + ns["value"] >= seen
            )
        )
        tables = {t["name"]: t["bytes"] for t in snap["tables"]}
        text.append(
            "    tables: "
            + ", ".join(f"{k} {v / seen:,.0f}" for k, v in tables.items() if v)
        )
    for name, cumulative, own in raw.get("profile", ()):
        text.append(f"  {cumulative:>8} µs/page cumulative {own:>7} own  {name}")
    return "\n".join(text)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pages", type=int, default=10_000)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-mirrorcost"))
    p.add_argument("--sitedir", type=Path, default=Path("/tmp/webspider-scale"))
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--project", type=Path, default=HERE.parent.parent)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--nomirror", action="store_true", help="crawl with -a mirror=0")
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument(
        "--keep", type=Path, help="keep a copy of the state at 25/50/75 %% here"
    )
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    args = p.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    root = synth.generate(args.sitedir, args.pages, seed=args.seed, spread=0.5)
    with sites.static_server(root) as (port, _access):
        out = args.workdir / "out"
        shutil.rmtree(out, ignore_errors=True)
        raw = crawl(args, f"http://127.0.0.1:{port}/", out)
    print(render(raw))
    if args.json is not None:
        args.json.write_text(json.dumps(raw, indent=1))
    shutil.rmtree(args.workdir / "out", ignore_errors=True)
    return 0 if raw["exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
