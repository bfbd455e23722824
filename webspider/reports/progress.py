"""The figures of the live progress line, and how they are written."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    pages: int = 0
    pending: int = 0
    in_flight: int = 0
    deferred: int = 0
    skipped: int = 0
    broken: int = 0
    pages_per_second: float = 0.0
    bytes: int = 0


def human_bytes(n: float) -> str:
    """``1536`` → ``1.5 KiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_line(p: Progress) -> str:
    """The terminal status line (short: it must fit on one line)."""
    return (
        f"pages {p.pages} | pending {p.pending} | in flight {p.in_flight} | "
        f"deferred {p.deferred} | skipped {p.skipped} | broken {p.broken} | "
        f"{p.pages_per_second:.1f} pages/s | {human_bytes(p.bytes)}"
    )


def format_log(p: Progress) -> str:
    """The same figures as a log message."""
    return (
        f"Progress: {p.pages} pages, {p.pending} pending, {p.in_flight} in flight, "
        f"{p.deferred} deferred, {p.skipped} skipped, {p.broken} broken, "
        f"{p.pages_per_second:.1f} pages/s, {human_bytes(p.bytes)}"
    )


def fit(line: str, width: int) -> str:
    """Cut a status line to the terminal width: a wrapped line cannot be
    redrawn in place with a carriage return."""
    if width <= 1 or len(line) < width:
        return line
    return line[: width - 2] + "…"
