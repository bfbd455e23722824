"""A shared crawl's other workers on this machine, as the mirror sees them:
their output folders beside this worker's, their mirrors (read when an
update crawl finds a page stored by another worker), and which of their
exports of the shared index an update crawl imports.

Apart from webspider.mirror.store because it reads the folders of other
processes, once when the crawl opens, and nothing a page does.

Pure: standard library and webspider.mirror.safefs only.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from webspider.mirror.safefs import SafeTree

if TYPE_CHECKING:
    from pathlib import Path


def sibling_outputs(folder: Path) -> list[Path]:
    """The other workers' folders beside ``folder`` when it is a shared
    crawl's worker folder (``<output>/worker-<n>``, held through
    ``worker-<n>.lock``: webspider.frontier.workers), else none."""
    folder = folder.resolve()
    parent = folder.parent
    if not (parent / f"{folder.name}.lock").is_file():
        return []
    return sorted(
        p
        for p in parent.glob("worker-*")
        if p != folder and p.name[len("worker-") :].isdigit() and p.is_dir()
    )


def last_export(paths: list[Path]) -> Path:
    """Of the exports ``paths`` (the first when none exists), the one of the
    latest run, a finished crawl's first, then the newest: every worker of
    a shared crawl exports the shared index when it stops, so the one that
    stopped last holds what the others wrote (webspider.reports.combine
    picks the same way)."""

    def rank(path: Path) -> tuple[int, bool, int]:
        try:
            with path.open("rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - 256))
                last = json.loads(fh.read().splitlines()[-1])
                return (
                    int(last["run"]),
                    bool(last["finished"]),
                    os.fstat(fh.fileno()).st_mtime_ns,
                )
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return -1, False, 0

    found = [p for p in paths if p.is_file()]
    return max(found, key=rank) if found else paths[0]


def sibling_trees(root: Path, output: Path, others: list[Path]) -> list[SafeTree]:
    """The mirrors of the other workers writing into the same output folder
    (their folders ``others``) when the mirror ``root`` is in the worker's
    folder ``output``, else none."""
    try:
        inside = root.resolve().relative_to(output.resolve())
    except ValueError:
        return []
    return [SafeTree(o / inside) for o in others if (o / inside).is_dir()]
