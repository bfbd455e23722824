"""Benchmark (not a test): memory and speed as the crawl grows (issue 14).

    nice -n 5 python bench/scale/run.py                        # 10k, 100k, 1M
    python bench/scale/run.py --sizes 10000,100000 --modes mirror,nomirror

For each size, generates (once, cached under --workdir) a synthetic site of
that many small pages (bench/scale/synth.py: 2-4 KB, 20-50 links each, a few
hundred 404 links), serves it with nginx on a free loopback port
(bench/sites.py), and crawls it with ``scrapy crawl webspider`` — default
settings (``mirror``) and ``-a mirror=0`` (``nomirror``) — as a child
process. While it runs, the resident memory of every process of the crawl
(the crawl and its page worker) is sampled and, once a second, recorded with
the number of lines in ``pages.jsonl`` (bench/scale/sample.py).

Reports, per crawl: pages/s over the first and the last 10% of the pages,
peak RSS, RSS when 10%, 50% and 100% of the pages were written, the peak
after the last page (end-of-crawl work), bytes per URL in memory (peak RSS /
pages) and on disk (the crawl state's files / URLs seen; the mirror and
pages.jsonl are not counted); and writes bench/results/<name>.{json,md} and
a plot of RSS against pages crawled (<name>.png with matplotlib, else
<name>.svg). See bench/README.md, "Scale".

``--continue`` runs a crawl that takes longer than one sitting in parts: the
samples are appended to ``<workdir>/crawl-<size>-<mode>.rows.jsonl`` as they
are taken and the site is served on the port it had
(``<workdir>/site-<size>.port``), so when the run is stopped (even killed,
the crawl with it), the same command with ``--continue`` resumes the crawl
(webspider's own resume) and its samples, its clock continuing from the last
sample; the figures then cover the whole crawl, each part's start-up
included. A crawl that already finished is not run again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import contenders  # noqa: E402
import sample  # noqa: E402
import sites  # noqa: E402
import synth  # noqa: E402
from run import _loadavg, machine_info  # noqa: E402

MODES = {"mirror": [], "nomirror": ["-a", "mirror=0"]}


def crawl(
    url: str,
    out: Path,
    project: Path,
    extra: list[str],
    *,
    log_path: Path,
    timeout: float,
    journal: Path | None = None,
    before: list[list[float]] | None = None,
) -> dict[str, Any]:
    """One crawl into ``out``, sampled; the raw figures. ``before``: the rows
    of its earlier parts (``--continue``), kept in ``journal``."""
    before = before or []
    t0 = before[-1][0] if before else 0.0
    command = contenders.webspider(url, out.parent, project)
    argv = [*command.argv, *extra]
    argv[argv.index(f"output={out.parent / 'out'}")] = f"output={out}"
    with log_path.open("ab" if before else "wb") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            cwd=command.cwd,
            env=command.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        sampler = sample.Sampler(proc.pid, out, journal=journal, t0=t0)
        sampler.start()
        deadline = time.monotonic() + timeout
        timed_out = False
        try:
            while True:
                pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    with suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                time.sleep(0.2)
        except BaseException:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        wall = time.perf_counter() - started
        sampler.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    summary: dict[str, Any] = {}
    with suppress(OSError, ValueError):
        summary = json.loads((out / "summary.json").read_text())
    rows = [*before, *([r.t, r.pages, r.rss_kib, r.state_bytes] for r in sampler.rows)]
    return {
        "argv": argv,
        "exit": proc.returncode,
        "timed_out": timed_out,
        "wall_s": round(t0 + wall, 2),
        "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 2),
        "parts": 1 + _parts(before),
        "peak_kib": max(
            sampler.peak_kib, rusage.ru_maxrss, *(row[2] for row in before)
        ),
        "pages": sampler.final_pages,
        "urls_seen": int(summary.get("urls_seen") or 0),
        "finish_reason": summary.get("finish_reason"),
        "state_bytes": sampler.final_state_bytes,
        "peak_state_bytes": max(
            [sampler.peak_state_bytes, *(row[3] for row in before)]
        ),
        "rows": rows,
    }


def finished_before(out: Path, before: list[list[float]]) -> dict[str, Any] | None:
    """The raw figures of a crawl that finished in an earlier part of a
    ``--continue`` run (its last part ended with the crawl's exit and its
    summary says finished), rebuilt from its samples; None otherwise."""
    if not before or before[-1][2]:
        return None
    summary: dict[str, Any] = {}
    with suppress(OSError, ValueError):
        summary = json.loads((out / "summary.json").read_text())
    if summary.get("finish_reason") != "finished":
        return None
    return {
        "argv": [],
        "exit": 0,
        "timed_out": False,
        "wall_s": before[-1][0],
        "cpu_s": None,
        "parts": _parts(before),
        "peak_kib": max(row[2] for row in before),
        "pages": before[-1][1],
        "urls_seen": int(summary.get("urls_seen") or 0),
        "finish_reason": "finished",
        "state_bytes": before[-1][3],
        "peak_state_bytes": max(row[3] for row in before),
        "rows": before,
    }


def _parts(rows: list[list[float]]) -> int:
    """How many runs of the crawl the rows cover: stretches of rows with an
    RSS (a part ends with rows without, its crawl gone)."""
    return sum(1 for i, row in enumerate(rows) if row[2] and not (i and rows[i - 1][2]))


def read_rows(journal: Path) -> list[list[float]]:
    """The samples of a crawl's earlier parts; a part's last row has no RSS
    (the crawl had exited), and a part killed with the run has none."""
    rows = []
    with suppress(OSError):
        for line in journal.read_text().splitlines():
            with suppress(ValueError):
                rows.append(json.loads(line))
    return rows


def site_port(workdir: Path, size: int, resume: bool) -> int | None:
    """The port a ``--continue`` run serves the site on: the one it had."""
    path = workdir / f"site-{size}.port"
    if not resume:
        path.unlink(missing_ok=True)
        return None
    with suppress(OSError, ValueError):
        return int(path.read_text())
    port = sites.free_port()
    path.write_text(f"{port}\n")
    return port


def _time_at(rows: list[list[float]], pages: float) -> float | None:
    """When ``pages`` lines were written (linear between two samples)."""
    prev_t, prev_p = 0.0, 0.0
    for t, p, _rss, _state in rows:
        if p >= pages:
            if p == prev_p:
                return t
            return prev_t + (pages - prev_p) / (p - prev_p) * (t - prev_t)
        prev_t, prev_p = t, p
    return None


def _rss_at(rows: list[list[float]], pages: float) -> float | None:
    """RSS when ``pages`` lines were written; for the last lines, written as
    the crawl exits, its last sample."""
    alive = [row for row in rows if row[2]]
    for _t, p, rss, _state in alive:
        if p >= pages:
            return round(rss / 1024, 1)
    return round(alive[-1][2] / 1024, 1) if alive else None


def figures(raw: dict[str, Any]) -> dict[str, Any]:
    rows, n = raw["rows"], raw["pages"]
    out: dict[str, Any] = {"pages": n}
    if n < 20 or not rows:
        return out
    t1, t10 = _time_at(rows, 1), _time_at(rows, 0.1 * n)
    t90, t100 = _time_at(rows, 0.9 * n), _time_at(rows, n)
    if t1 is not None and t10 is not None and t10 > t1:
        out["pages_s_first10"] = round((0.1 * n - 1) / (t10 - t1), 1)
    if t90 is not None and t100 is not None and t100 > t90:
        out["pages_s_last10"] = round(0.1 * n / (t100 - t90), 1)
    if "pages_s_first10" in out and "pages_s_last10" in out:
        out["late_early"] = round(out["pages_s_last10"] / out["pages_s_first10"], 2)
    out["peak_rss_mb"] = round(raw["peak_kib"] / 1024, 1)
    for frac in (10, 50, 100):
        out[f"rss_at_{frac}_mb"] = _rss_at(rows, frac / 100 * n)
    # the end-of-crawl work (fix-up, reports, closing the state): from the
    # last 1% of the pages to the exit
    end = [r[2] for r in rows if r[1] >= 0.99 * n]
    out["peak_end_mb"] = round(max(end, default=0) / 1024, 1)
    out["mem_bytes_per_page"] = round(raw["peak_kib"] * 1024 / n)
    if out["rss_at_10_mb"] and out["rss_at_100_mb"]:
        growth = (out["rss_at_100_mb"] - out["rss_at_10_mb"]) * 2**20
        out["growth_bytes_per_page"] = round(growth / (0.9 * n))
    seen = raw["urls_seen"] or n
    out["urls_seen"] = seen
    out["state_mb"] = round(raw["state_bytes"] / 2**20, 1)
    out["peak_state_mb"] = round(raw["peak_state_bytes"] / 2**20, 1)
    out["disk_bytes_per_url"] = round(raw["state_bytes"] / seen)
    # the largest the files were while the crawl ran (the WAL included)
    out["peak_disk_bytes_per_url"] = round(raw["peak_state_bytes"] / seen)
    return out


COLUMNS = (
    ("size", "site"),
    ("mode", "mode"),
    ("pages", "pages"),
    ("wall_s", "wall s"),
    ("pages_s_first10", "pages/s first 10%"),
    ("pages_s_last10", "pages/s last 10%"),
    ("late_early", "last/first"),
    ("peak_rss_mb", "peak RSS MB"),
    ("rss_at_10_mb", "RSS@10% MB"),
    ("rss_at_50_mb", "RSS@50% MB"),
    ("rss_at_100_mb", "RSS@100% MB"),
    ("peak_end_mb", "peak at the end MB"),
    ("mem_bytes_per_page", "peak RSS B/page"),
    ("growth_bytes_per_page", "RSS growth B/page (10%→100%)"),
    ("state_mb", "state MB"),
    ("disk_bytes_per_url", "state B/URL"),
    ("peak_disk_bytes_per_url", "peak state B/URL"),
    ("exit", "exit"),
)


def markdown(results: list[dict[str, Any]], info: dict[str, str]) -> str:
    lines = ["# Scale: memory and speed against the number of pages", ""]
    lines += [
        "| " + " | ".join(h for _k, h in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in results:
        cells = []
        for key, _h in COLUMNS:
            value = r.get(key)
            if value is None:
                cells.append("-")
            else:
                cells.append(value if isinstance(value, str) else f"{value:,}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "RSS: all the crawl's processes together (the crawl and its page "
        "worker), sampled every 0.2 s. Peak at the end: from the last 1% of the "
        "pages to the exit (end-of-crawl work). B/page in memory = peak RSS / pages; "
        "state B/URL = the crawl state's files after the crawl "
        "(`.webspider-state.sqlite3*`) / URLs seen (summary.json); peak state "
        "B/URL: the largest they were in a sample during the crawl (WAL "
        "included).",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    return "\n".join(lines) + "\n"


def plot(path: Path, results: list[dict[str, Any]]) -> Path:
    """RSS against pages crawled, one panel per site size."""
    sizes = sorted({r["size"] for r in results})
    try:
        import matplotlib  # noqa: PLC0415 (optional)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return _svg(path.with_suffix(".svg"), results, sizes)
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        for r in (r for r in results if r["size"] == size):
            rows = [row for row in r["rows"] if row[2]]
            ax.plot(
                [row[1] for row in rows],
                [row[2] / 1024 for row in rows],
                label=r["mode"],
            )
        ax.set_title(f"{size:,} pages")
        ax.set_xlabel("pages crawled (lines in pages.jsonl)")
        ax.set_ylabel("RSS of the crawl's processes, MB")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    out = path.with_suffix(".png")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _svg(path: Path, results: list[dict[str, Any]], sizes: list[int]) -> Path:
    """The same plot without matplotlib: polylines, axes, a legend."""
    w, h, pad = 420, 300, 50
    colours = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * len(sizes)}" '
        f'height="{h}" font-family="sans-serif" font-size="11">'
    ]
    for n, size in enumerate(sizes):
        runs = [r for r in results if r["size"] == size]
        top = max((row[2] for r in runs for row in r["rows"]), default=1) / 1024
        right = max((row[1] for r in runs for row in r["rows"]), default=1) or 1
        x0 = n * w + pad
        parts.append(
            f'<text x="{x0}" y="15">{size:,} pages: RSS MB (0-{top:.0f}) '
            f"against pages (0-{right:,})</text>"
            f'<rect x="{x0}" y="{pad / 2}" width="{w - 1.5 * pad}" '
            f'height="{h - 1.5 * pad}" fill="none" stroke="#999"/>'
        )
        for k, r in enumerate(runs):
            points = " ".join(
                f"{x0 + row[1] / right * (w - 1.5 * pad):.1f},"
                f"{h - pad + -row[2] / 1024 / top * (h - 1.5 * pad):.1f}"
                for row in r["rows"]
                if row[2]
            )
            colour = colours[k % len(colours)]
            parts.append(
                f'<polyline fill="none" stroke="{colour}" points="{points}"/>'
                f'<text x="{x0 + 5}" y="{h - 10 - 12 * k}" fill="{colour}">'
                f"{r['mode']}</text>"
            )
    parts.append("</svg>\n")
    path.write_text("".join(parts))
    return path


def write_results(
    args: argparse.Namespace,
    argv: list[str] | None,
    results: list[dict[str, Any]],
    load_start: str,
) -> None:
    """Results so far: written after every crawl, so a long run stopped
    halfway keeps what it measured."""
    project = args.project.resolve()
    info = machine_info(project)
    info["command"] = "python bench/scale/run.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    info["load average at start / end"] = f"{load_start} / {_loadavg()}"
    info["site"] = f"seed {args.seed}, spread {args.spread} (bench/scale/synth.py)"
    args.out.mkdir(parents=True, exist_ok=True)
    md = markdown(results, info)
    (args.out / f"{args.name}.md").write_text(md)
    (args.out / f"{args.name}.json").write_text(
        json.dumps({"machine": info, "results": results}, indent=1) + "\n"
    )
    chart = plot(args.out / args.name, results)
    print(md, file=sys.stderr)
    print(f"wrote {args.out / args.name}.{{md,json}} and {chart}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--modes", default="mirror,nomirror")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-scale"))
    p.add_argument("--seed", type=int, default=14)
    p.add_argument(
        "--spread",
        type=float,
        default=0.5,
        help="share of links to any page of the site (the rest point just ahead)",
    )
    p.add_argument("--project", type=Path, default=HERE.parent.parent)
    p.add_argument("--out", type=Path, default=HERE.parent / "results")
    p.add_argument("--name", default="scale")
    p.add_argument("--timeout", type=float, default=4 * 3600)
    p.add_argument(
        "--keep", action="store_true", help="keep each crawl's output folder"
    )
    p.add_argument(
        "--continue",
        dest="resume",
        action="store_true",
        help="continue the crawls a stopped or killed run left (see above)",
    )
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    for mode in modes:
        if mode not in MODES:
            p.error(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    project = args.project.resolve()
    load_start = _loadavg()
    # a plain kill ends the run as Ctrl-C does: nginx and the crawl stopped
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    results: list[dict[str, Any]] = []
    for size in sizes:
        started = time.perf_counter()
        root = synth.generate(args.workdir, size, seed=args.seed, spread=args.spread)
        print(
            f"== {size:,} pages at {root} ({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
        fixed = site_port(args.workdir, size, args.resume)
        with sites.static_server(root, fixed) as (port, access):
            url = f"http://127.0.0.1:{port}/"
            for mode in modes:
                out = args.workdir / f"crawl-{size}-{mode}"
                journal = args.workdir / f"crawl-{size}-{mode}.rows.jsonl"
                before = read_rows(journal) if args.resume else []
                if not before:
                    shutil.rmtree(out, ignore_errors=True)
                    journal.unlink(missing_ok=True)
                access.mark()
                raw = finished_before(out, before) or crawl(
                    url,
                    out,
                    project,
                    MODES[mode],
                    log_path=args.workdir / f"crawl-{size}-{mode}.log",
                    timeout=args.timeout,
                    journal=journal if args.resume else None,
                    before=before,
                )
                time.sleep(0.1)  # nginx's last access-log lines
                served = access.read()
                row = {"size": size, "mode": mode} | figures(raw)
                row |= {
                    "wall_s": raw["wall_s"],
                    "cpu_s": raw["cpu_s"],
                    "exit": raw["exit"],
                    "timed_out": raw["timed_out"],
                    "parts": raw["parts"],
                    "finish_reason": raw["finish_reason"],
                    "requests_served": len(served),
                    "pages_served_2xx": len(
                        {s.path for s in served if 200 <= s.status < 300}
                    ),
                    "argv": raw["argv"],
                    "rows": raw["rows"],
                }
                results.append(row)
                print(
                    "   "
                    + ", ".join(
                        f"{k}={row.get(k)}"
                        for k, _h in COLUMNS
                        if k not in ("size", "mode")
                    ),
                    file=sys.stderr,
                )
                if not args.keep and not args.resume:
                    shutil.rmtree(out, ignore_errors=True)
                write_results(args, argv, results, load_start)
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
