"""report.html: one self-contained page a site owner wants to read.

Inline CSS, inline SVG charts, no script and no network access: it can be
mailed, archived or opened from a CI artifact. Long lists are cut (the
complete data is in the JSON lines files next to it): the report is given
the rows it shows, never a whole ledger, and the totals from the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

from webspider.keys import BROKEN_LINKS_FILE
from webspider.reports.progress import human_bytes
from webspider.reports.summary import Summary, format_duration

if TYPE_CHECKING:
    from collections.abc import Sequence

#: rows shown per table; the files next to the report have all of them
MAX_ROWS = 500
#: referrers shown per broken link (the rest are counted)
MAX_REFERRERS_SHOWN = 50
#: referrers shown before the "more" disclosure
REFERRERS_OPEN = 3


@dataclass
class Report:
    summary: Summary
    pages_by_depth: dict[int, int] = field(default_factory=dict)
    pages_by_round: dict[int, int] = field(default_factory=dict)
    #: records as in broken-links.jsonl: the MAX_ROWS shown (the summary
    #: has the total)
    broken: list[dict[str, Any]] = field(default_factory=list)
    #: (url, duplicate_of, kind), the MAX_ROWS shown
    duplicates: list[tuple[str, str, str]] = field(default_factory=list)
    #: (size, url, content type), largest first
    largest: list[tuple[int, str, str | None]] = field(default_factory=list)
    title: str = "Crawl report"


_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f4f5f7;color:#1d2330;
 font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1140px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:18px;margin:0 0 12px}
.sub{color:#5b6478;margin:0 0 20px}
.sub a{color:inherit}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:13px;
 font-weight:600;background:#e3e7ee;color:#3a4256;vertical-align:middle}
.badge.ok{background:#dff3e6;color:#1f7a44}
.badge.warn{background:#fdecd3;color:#8a5300}
.badge.bad{background:#fbe1e1;color:#a32727}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));
 gap:12px;margin-bottom:20px}
.card{background:#fff;border-radius:8px;padding:12px 14px;
 box-shadow:0 1px 2px rgba(20,30,50,.08)}
.card .n{font-size:24px;font-weight:650}
.card .l{color:#5b6478;font-size:13px}
.card.bad .n{color:#c0392b}
section{background:#fff;border-radius:8px;padding:16px 18px;margin-bottom:18px;
 box-shadow:0 1px 2px rgba(20,30,50,.08)}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:18px;
 margin-bottom:18px}
section svg{max-width:100%;height:auto;display:block}
.grid section{margin:0}
table{width:100%;border-collapse:collapse;font-size:14px}
th{text-align:left;font-weight:600;color:#5b6478;border-bottom:2px solid #e3e7ee;
 padding:6px 8px}
td{border-bottom:1px solid #eceff4;padding:6px 8px;vertical-align:top}
td.num,th.num{text-align:right;white-space:nowrap}
.url{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:13px;
 word-break:break-all}
.muted{color:#5b6478;font-size:13px}
ul.refs{margin:0;padding-left:16px}
ul.refs li{margin:1px 0}
details summary{cursor:pointer;color:#3b5bdb;font-size:13px}
.empty{color:#5b6478;font-style:italic}
a{color:#2f55c4;text-decoration:none}
svg text{font:13px system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
 fill:#1d2330}
"""


def status_color(code: int) -> str:
    return {2: "#2e9e5b", 3: "#3b7dd8", 4: "#e08a1e", 5: "#d64545"}.get(
        code // 100, "#8a93a6"
    )


def bar_chart(rows: Sequence[tuple[str, int, str]], width: int = 460) -> str:
    """Horizontal bars: (label, value, colour) each, as inline SVG."""
    if not rows:
        return '<p class="empty">Nothing to show.</p>'
    label_w, value_w, row_h = 80, 56, 26
    top = max(value for _, value, _ in rows) or 1
    bar_space = width - label_w - value_w
    height = row_h * len(rows) + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">'
    ]
    for i, (label, value, color) in enumerate(rows):
        y = 2 + i * row_h
        w = max(2.0, bar_space * value / top) if value else 0.0
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">'
            f"{escape(label)}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 7}" '
            f'rx="3" fill="{color}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 16}">{value}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def render(report: Report) -> str:
    s = report.summary
    body = [
        _header(report),
        _cards(s),
        '<div class="grid">',
        _chart_section(
            "Status codes",
            [
                (str(code), n, status_color(code))
                for code, n in sorted(s.status_codes.items())
            ],
        ),
        _chart_section(
            "Pages per depth",
            [
                (f"depth {d}", n, "#5a7bd8")
                for d, n in sorted(report.pages_by_depth.items())
            ],
        ),
        _chart_section(
            "Pages per round",
            [
                (f"round {r}", n, "#7a63c7")
                for r, n in sorted(report.pages_by_round.items())
            ],
        ),
        _skipped(s),
        "</div>",
        _broken(report),
        _duplicates(report),
        _largest(report),
        _outputs(s),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(report.title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )


def _header(report: Report) -> str:
    s = report.summary
    reason = s.finish_reason
    if reason is None:
        badge = '<span class="badge warn">running</span>'
    elif reason == "finished":
        badge = '<span class="badge ok">finished</span>'
    else:
        badge = f'<span class="badge warn">stopped early: {escape(reason)}</span>'
    starts = ", ".join(
        f'<a class="url" href="{escape(u)}">{escape(u)}</a>' for u in s.start_urls
    )
    when = escape(_readable_time(s.started_at))
    return (
        f"<h1>{escape(report.title)} {badge}</h1>"
        f'<p class="sub">{starts or "—"} · started {when} · ran '
        f"{format_duration(s.elapsed_seconds)}</p>"
    )


def _readable_time(iso: str) -> str:
    """``2024-05-01T12:30:00+00:00`` → ``2024-05-01 12:30:00 UTC``."""
    if iso.endswith("+00:00"):
        return iso[:-6].replace("T", " ") + " UTC"
    return iso.replace("T", " ")


def _cards(s: Summary) -> str:
    cards = [
        ("Pages", str(s.pages), False),
        ("Distinct URLs seen", str(s.urls_seen), False),
        ("Links", str(s.links), False),
        (
            f"Broken ({s.broken_internal} internal, {s.broken_external} external)",
            str(s.broken),
            s.broken > 0,
        ),
        ("Duplicates", str(s.duplicates), False),
        ("Skipped", str(s.skipped_total), False),
        ("Rounds", str(s.rounds), False),
        ("Deferred remaining", str(s.deferred_remaining), False),
        ("Downloaded", human_bytes(s.bytes), False),
        ("Elapsed", format_duration(s.elapsed_seconds), False),
    ]
    items = "".join(
        f'<div class="card{" bad" if bad else ""}"><div class="n">{escape(n)}</div>'
        f'<div class="l">{escape(label)}</div></div>'
        for label, n, bad in cards
    )
    return f'<div class="cards">{items}</div>'


def _chart_section(title: str, rows: list[tuple[str, int, str]]) -> str:
    return f"<section><h2>{escape(title)}</h2>{bar_chart(rows)}</section>"


def _skipped(s: Summary) -> str:
    if not s.skipped:
        inner = '<p class="empty">No URL was skipped.</p>'
    else:
        rows = "".join(
            f'<tr><td>{escape(reason)}</td><td class="num">{n}</td></tr>'
            for reason, n in sorted(s.skipped.items(), key=lambda kv: -kv[1])
        )
        inner = (
            f'<table><tr><th>Reason</th><th class="num">URLs</th></tr>{rows}</table>'
        )
    return f"<section><h2>Skipped URLs</h2>{inner}</section>"


def _result(record: dict[str, Any]) -> str:
    status, error = record.get("status"), record.get("error")
    parts = []
    if status is not None:
        parts.append(
            f'<span class="badge" style="background:{status_color(status)};'
            f'color:#fff">{status}</span>'
        )
    if error:
        parts.append(f'<span class="badge bad">{escape(str(error))}</span>')
    detail = record.get("detail")
    if detail:
        parts.append(f'<div class="muted">{escape(str(detail))}</div>')
    if record.get("redirected_to"):
        parts.append(
            f'<div class="muted">via redirect to '
            f'<span class="url">{escape(record["redirected_to"])}</span></div>'
        )
    return " ".join(parts)


def _referrer(ref: dict[str, Any]) -> str:
    text = ref.get("text") or ""
    label = f" — “{escape(text)}”" if text else ""
    tag = ref.get("tag")
    tag_label = f' <span class="muted">&lt;{escape(tag)}&gt;</span>' if tag else ""
    url = escape(ref["url"])
    return f'<li><a class="url" href="{url}">{url}</a>{label}{tag_label}</li>'


def _referrers(record: dict[str, Any]) -> str:
    refs = record.get("referrers") or []
    count = record.get("referrer_count", len(refs))
    if not refs:
        return '<span class="muted">start URL or redirect only</span>'
    shown = refs[:MAX_REFERRERS_SHOWN]
    head = "".join(_referrer(r) for r in shown[:REFERRERS_OPEN])
    html = f'<ul class="refs">{head}</ul>'
    rest = shown[REFERRERS_OPEN:]
    if rest:
        more = "".join(_referrer(r) for r in rest)
        html += (
            f"<details><summary>{count - REFERRERS_OPEN} more</summary>"
            f'<ul class="refs">{more}</ul></details>'
        )
    elif count > len(shown):
        html += f'<div class="muted">and {count - len(shown)} more</div>'
    return html


def _broken(report: Report) -> str:
    # Internal first (the site owner can fix those), most linked first.
    records = sorted(
        report.broken,
        key=lambda r: (not r.get("internal"), -int(r.get("referrer_count", 0))),
    )
    if not records:
        return (
            "<section><h2>Broken links</h2>"
            '<p class="empty">No broken links found.</p></section>'
        )
    rows = []
    for record in records[:MAX_ROWS]:
        where = "internal" if record.get("internal") else "external"
        rows.append(
            f'<tr><td class="url">{escape(record["url"])}</td>'
            f"<td>{_result(record)}</td><td>{where}</td>"
            f'<td class="num">{record.get("referrer_count", 0)}</td>'
            f"<td>{_referrers(record)}</td></tr>"
        )
    total = max(report.summary.broken, len(records))
    more = _more(total, BROKEN_LINKS_FILE)
    return (
        f"<section><h2>Broken links ({total})</h2>"
        '<table><tr><th style="width:25%">URL</th><th style="width:21%">Result</th>'
        '<th>Where</th><th class="num">Links</th><th>Linked from</th></tr>'
        f"{''.join(rows)}</table>{more}</section>"
    )


def _duplicates(report: Report) -> str:
    total = report.summary.duplicates
    if not report.duplicates:
        return (
            "<section><h2>Duplicate content</h2>"
            '<p class="empty">No duplicate pages found.</p></section>'
        )
    rows = "".join(
        f'<tr><td class="url">{escape(url)}</td><td class="url">{escape(first)}</td>'
        f"<td>{escape(kind)}</td></tr>"
        for url, first, kind in report.duplicates[:MAX_ROWS]
    )
    return (
        f"<section><h2>Duplicate content ({total})</h2>"
        "<table><tr><th>URL</th><th>Same content as</th><th>Match</th></tr>"
        f"{rows}</table>{_more(total, 'pages.jsonl (duplicate_of)')}</section>"
    )


def _largest(report: Report) -> str:
    if not report.largest:
        return ""
    rows = "".join(
        f'<tr><td class="url">{escape(url)}</td><td>{escape(ctype or "—")}</td>'
        f'<td class="num">{human_bytes(size)}</td></tr>'
        for size, url, ctype in report.largest
    )
    return (
        f"<section><h2>Largest files</h2>"
        '<table><tr><th>URL</th><th>Type</th><th class="num">Size</th></tr>'
        f"{rows}</table></section>"
    )


def _outputs(s: Summary) -> str:
    if not s.outputs:
        return ""
    rows = "".join(
        f'<tr><td>{escape(name)}</td><td class="url">{escape(path)}</td></tr>'
        for name, path in s.outputs.items()
    )
    return f"<section><h2>Output files</h2><table>{rows}</table></section>"


def _more(total: int, where: str) -> str:
    if total <= MAX_ROWS:
        return ""
    return f'<p class="muted">{total - MAX_ROWS} more in {escape(where)}.</p>'
