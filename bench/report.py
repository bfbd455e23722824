"""Medians, ratios, targets, and the markdown / JSON / PNG outputs."""

from __future__ import annotations

import json
import operator
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

METRICS = (
    "wall_s",
    "cpu_s",
    "user_s",
    "sys_s",
    "maxrss_mb",
    "requests",
    "distinct_urls",
    "pages_ok",
)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{benchmark: {site: {contender: medians}}} plus ratios per site."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["benchmark"], row["site"], row["contender"]), []).append(
            row
        )
    out: dict[str, Any] = {}
    for (bench, site, contender), runs in groups.items():
        med = {k: statistics.median(r[k] for r in runs) for k in METRICS}
        med["pages_per_s"] = statistics.median(
            r["pages_ok"] / r["wall_s"] if r["wall_s"] else 0.0 for r in runs
        )
        med["cpu_pct"] = 100 * med["cpu_s"] / med["wall_s"] if med["wall_s"] else 0.0
        # when the server saw the first request / how long the crawler ran
        # after the last response (start-up and end-of-crawl work)
        for key in ("first_request_s", "after_last_s"):
            seen = [r["extra"][key] for r in runs if key in r.get("extra", {})]
            med[key] = statistics.median(seen) if seen else float("nan")
        med["runs"] = len(runs)
        med["exit_codes"] = sorted({r["exit_code"] for r in runs})
        med["timeouts"] = sum(1 for r in runs if r["timed_out"])
        out.setdefault(bench, {}).setdefault(site, {"contenders": {}})["contenders"][
            contender
        ] = med
    for sites in out.values():
        for data in sites.values():
            data["ratios"] = _ratios(data["contenders"])
    return out


def _ratios(cont: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    ratios: dict[str, dict[str, float]] = {}
    # webspider, and webspider@LABEL (another checkout) against the others
    for name, ws in cont.items():
        if name.partition("@")[0] != "webspider":
            continue
        others = ["baseline", "wget", "httrack"]
        if name != "webspider":
            others.insert(0, "webspider")
        for other in others:
            o = cont.get(other)
            if o is None:
                continue
            ratios[f"{name}/{other}"] = {
                k: round(ws[k] / o[k], 3) if o[k] else float("nan")
                for k in ("wall_s", "cpu_s", "maxrss_mb")
            }
    return ratios


#: Issue 8's targets: (description, site, ratio, measure, bound, met when)
TARGETS: list[tuple[str, str, str, str, float, Callable[[float, float], bool]]] = [
    ("docs: webspider wall <= 0.2x plain Scrapy",
     "docs", "webspider/baseline", "wall_s", 0.2, operator.le),
    ("docs: webspider wall <= 1.5x wget",
     "docs", "webspider/wget", "wall_s", 1.5, operator.le),
    ("latency: webspider >= 5x faster than wget (wall ratio <= 0.2)",
     "latency", "webspider/wget", "wall_s", 0.2, operator.le),
    ("docs: webspider peak RSS below plain Scrapy's",
     "docs", "webspider/baseline", "maxrss_mb", 1.0, operator.lt),
]  # fmt: skip


def targets(summary: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """Issue 8's targets: (description, measured, met?)."""
    crawl = summary.get("crawl", {})
    out: list[tuple[str, str, bool | None]] = []
    for description, site, pair, key, bound, met in TARGETS:
        value = crawl.get(site, {}).get("ratios", {}).get(pair, {}).get(key)
        r = None if value is None else float(value)
        out.append((description, _fmt(r), None if r is None else met(r, bound)))
    return out


def _fmt(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.2f}x"


def markdown(summary: dict[str, Any], info: dict[str, str]) -> str:
    lines = ["# webspider benchmark", ""]
    lines += ["| machine | |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in info.items()]
    lines.append("")
    for bench, sites in summary.items():
        for site, data in sites.items():
            lines += [f"## {bench}: {site}", ""]
            lines += [
                "| contender | wall s | CPU s | CPU % | pages/s | peak RSS MB "
                "| pages 2xx | distinct URLs | requests | first request s "
                "| after last s | runs | exit |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                "| ---: | ---: | ---: | --- |",
            ]
            for name, m in data["contenders"].items():
                exits = ",".join(map(str, m["exit_codes"]))
                if m["timeouts"]:
                    exits += f" ({m['timeouts']} timed out)"
                lines.append(
                    f"| {name} | {m['wall_s']:.2f} | {m['cpu_s']:.2f} "
                    f"| {m['cpu_pct']:.0f} | {m['pages_per_s']:.0f} "
                    f"| {m['maxrss_mb']:.0f} | {m['pages_ok']:.0f} "
                    f"| {m['distinct_urls']:.0f} | {m['requests']:.0f} "
                    f"| {m['first_request_s']:.2f} | {m['after_last_s']:.2f} "
                    f"| {m['runs']} | {exits} |"
                )
            lines.append("")
            for pair, r in data["ratios"].items():
                lines.append(
                    f"- {pair}: wall {r['wall_s']:.2f}x, CPU {r['cpu_s']:.2f}x, "
                    f"peak RSS {r['maxrss_mb']:.2f}x"
                )
            lines.append("")
    lines += [
        "## Targets (issue 8)",
        "",
        "| target | measured | met |",
        "| --- | ---: | --- |",
    ]
    for desc, measured, met in targets(summary):
        mark = "n/a" if met is None else ("yes" if met else "**no**")
        lines.append(f"| {desc} | {measured} | {mark} |")
    lines += [
        "",
        "Medians over the runs. pages/s = distinct GET URLs the server answered "
        "2xx / wall time. `exit` 8 is wget's normal status when any URL 404s "
        "(robots.txt). first request s: from the start of the process to the "
        "first response the server logged; after last s: from the last "
        "response the server logged to the process's exit.",
        "",
    ]
    return "\n".join(lines)


def write_json(
    path: Path,
    info: dict[str, str],
    summary: dict[str, Any],
    rows: list[dict[str, Any]],
) -> None:
    path.write_text(
        json.dumps({"machine": info, "summary": summary, "runs": rows}, indent=2) + "\n"
    )


def chart(path: Path, summary: dict[str, Any], info: dict[str, str]) -> None:
    try:
        import matplotlib  # noqa: PLC0415 (optional: bench/requirements.txt)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        print("bench: no chart (pip install -r bench/requirements.txt)")
        return
    crawl = summary.get("crawl", {})
    sites = list(crawl)
    if not sites:
        return
    contenders: list[str] = []
    for data in crawl.values():
        contenders += [c for c in data["contenders"] if c not in contenders]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    panels = (
        ("wall_s", "wall time (s, median)"),
        ("cpu_s", "CPU time user+sys (s)"),
        ("maxrss_mb", "peak RSS (MB)"),
    )
    width = 0.8 / max(1, len(contenders))
    for ax, (key, title) in zip(axes, panels, strict=True):
        for i, name in enumerate(contenders):
            values = [crawl[s]["contenders"].get(name, {}).get(key, 0) for s in sites]
            xs = [
                j + (i - (len(contenders) - 1) / 2) * width for j in range(len(sites))
            ]
            bars = ax.bar(xs, values, width, label=name)
            ax.bar_label(bars, fmt="%.1f" if key != "maxrss_mb" else "%.0f", fontsize=7)
        ax.set_xticks(range(len(sites)), sites)
        ax.set_title(title)
    axes[0].legend()
    fig.suptitle(
        f"webspider benchmark, {info.get('date', '')}, {info.get('nproc')} CPUs "
        f"({info.get('cpu', '')})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
