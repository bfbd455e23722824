"""The end-of-crawl summary: its figures, summary.json, and the log lines.

summary.json's keys are stable (documented in docs/reports.md); new keys may
be added, existing ones keep their name and meaning. ``version`` changes only
if that promise has to be broken.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webspider.reports.progress import human_bytes

SUMMARY_VERSION = 1


@dataclass
class Summary:
    start_urls: list[str] = field(default_factory=list)
    started_at: str = ""
    finished_at: str = ""
    #: Scrapy's close reason ("finished", "shutdown", …); None while running
    finish_reason: str | None = None
    elapsed_seconds: float = 0.0
    pages: int = 0
    urls_seen: int = 0
    links: int = 0
    requests: int = 0
    bytes: int = 0
    broken_internal: int = 0
    broken_external: int = 0
    missing_anchors: int = 0
    duplicates_exact: int = 0
    duplicates_normalized: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    deferred_remaining: int = 0
    status_codes: dict[int, int] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    #: where the bounds of README "Bounds and traps" bit (the trap rules'
    #: are skip reasons): pages read in part, waits for bodies in memory
    links_capped_pages: int = 0
    parse_budget_pages: int = 0
    body_memory_waits: int = 0
    body_memory_max_bytes: int = 0

    @property
    def broken(self) -> int:
        return self.broken_internal + self.broken_external

    @property
    def duplicates(self) -> int:
        return self.duplicates_exact + self.duplicates_normalized

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def as_dict(self) -> dict[str, Any]:
        """The content of summary.json."""
        return {
            "version": SUMMARY_VERSION,
            "start_urls": self.start_urls,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "finish_reason": self.finish_reason,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "pages": self.pages,
            "urls_seen": self.urls_seen,
            "links": self.links,
            "requests": self.requests,
            "bytes": self.bytes,
            "broken": {
                "total": self.broken,
                "internal": self.broken_internal,
                "external": self.broken_external,
                "missing_anchors": self.missing_anchors,
            },
            "duplicates": {
                "total": self.duplicates,
                "exact": self.duplicates_exact,
                "normalized": self.duplicates_normalized,
            },
            "skipped": {
                "total": self.skipped_total,
                "by_reason": dict(sorted(self.skipped.items())),
            },
            "rounds": self.rounds,
            "deferred_remaining": self.deferred_remaining,
            "status_codes": {str(k): v for k, v in sorted(self.status_codes.items())},
            "outputs": self.outputs,
            "limits": {
                "links_capped_pages": self.links_capped_pages,
                "parse_budget_pages": self.parse_budget_pages,
                "body_memory_waits": self.body_memory_waits,
                "body_memory_max_bytes": self.body_memory_max_bytes,
            },
        }

    def log_lines(self) -> list[str]:
        """The summary written to the log at the end of the crawl."""
        skipped = ", ".join(f"{r} {n}" for r, n in sorted(self.skipped.items()))
        lines = [
            f"Crawl {self.finish_reason or 'running'} after "
            f"{format_duration(self.elapsed_seconds)}: {self.pages} pages, "
            f"{self.urls_seen} distinct URLs seen, {self.links} links, "
            f"{human_bytes(self.bytes)}",
            f"Broken links: {self.broken} ({self.broken_internal} internal, "
            f"{self.broken_external} external"
            + (
                f", {self.missing_anchors} missing anchors"
                if self.missing_anchors
                else ""
            )
            + f"); duplicates: {self.duplicates}",
            f"Skipped: {self.skipped_total}" + (f" ({skipped})" if skipped else ""),
            f"Rounds: {self.rounds}, deferred remaining: {self.deferred_remaining}",
        ]
        if self.links_capped_pages or self.parse_budget_pages or self.body_memory_waits:
            lines.append(
                f"Limits: {self.links_capped_pages} pages cut at the link cap, "
                f"{self.parse_budget_pages} at the parse budget; "
                f"{self.body_memory_waits} waits for memory (most bodies held: "
                f"{human_bytes(self.body_memory_max_bytes)})"
            )
        if self.outputs:
            lines.append("Outputs: " + ", ".join(str(p) for p in self.outputs.values()))
        return lines


def format_duration(seconds: float) -> str:
    """``3725.4`` → ``1h 02m 05s``; short crawls keep a decimal."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    return f"{minutes}m {secs:02d}s"
