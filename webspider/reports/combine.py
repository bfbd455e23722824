"""The outputs of a shared crawl's workers, combined into one crawl's outputs.

Workers of a crawl on Redis each write their own folder (``worker-<n>``,
webspider.frontier.workers); ``scrapy combine`` (webspider.commands.combine)
reads those folders, from one machine or several, and writes into a new
folder what one process crawling alone would have written:

- ``pages.jsonl``: each URL once, the line of its first fetch (a page fetched
  again after a worker's kill is in two files), merged in ``fetched_at``
  order; the partial last line a killed worker leaves, and any line that is
  not JSON, are left out.
- ``mirror/``: the union of the workers' mirrors (webspider.mirror.combine).
- ``mirror-state.jsonl``: the export of the shared index, from the worker
  that wrote it last (a finished crawl's first), its ``mirror_root`` the new
  mirror's.
- ``broken-links.jsonl``: every worker writes it from the shared ledger, a
  killed worker's is older: per broken URL, the record with the most
  referring pages; in URL order.
- ``changes.jsonl``, ``skipped.jsonl``: each URL once (the first line);
  skipped.jsonl's ``depth`` lines (URLs left deferred) only of URLs no
  worker fetched. ``deferred.jsonl``: the newest worker's (the deferred
  frontier is shared).
- ``summary.json`` and ``report.html`` (webspider.reports.html): pages,
  distinct URLs, broken links, duplicates, pages per depth and round and the
  largest files recomputed from the combined files; requests, bytes, links,
  status codes, skipped and limits added up from the workers'
  ``summary.json`` (what each worker did, so a page fetched twice after a
  kill is counted twice there); the skips for reason ``depth`` are the
  newest worker's ``deferred_remaining`` (each worker counts the shared
  frontier's leftovers).
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from webspider import skips
from webspider.config import ConfigError
from webspider.keys import (
    BROKEN_LINKS_FILE,
    CHANGES_FILE,
    DEFERRED_FILE,
    MIRROR_STATE_FILE,
    PAGES_FILE,
    REPORT_FILE,
    SKIPPED_FILE,
    SUMMARY_FILE,
)
from webspider.mirror.combine import (
    Indexed,
    MirrorCounts,
    combine_mirrors,
    fix_up_combined,
)
from webspider.mirror.fixup import FixedUp
from webspider.reports.html import MAX_REFERRERS_SHOWN, MAX_ROWS, Report, render
from webspider.reports.summary import Summary
from webspider.utils.atomic import open_atomic, write_atomic

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Set

logger = logging.getLogger(__name__)

MIRROR_DIR = "mirror"
#: summary.json's key naming the folders a combined output was made from
COMBINED_FROM = "combined_from"
#: written into a combined output before anything else, so that one left
#: incomplete (Ctrl-C, a kill, a full disk) is known as a combination and
#: the same command replaces it; the summary says so too once written
COMBINING_MARK = ".webspider-combined"


@dataclass
class Combined:
    """What a combination found (logged by the command)."""

    inputs: list[Path]
    summary: Summary
    pages_lines: int = 0
    #: lines left out: a URL already there, a partial last line, not JSON
    repeated: int = 0
    unreadable: int = 0
    mirror: MirrorCounts = field(default_factory=MirrorCounts)
    #: pages of the combined mirror whose links were fixed up
    fixed: FixedUp = field(default_factory=FixedUp)


# -- the inputs ---------------------------------------------------------------------
def is_output(folder: Path) -> bool:
    """A webspider output: the folder a crawl wrote (its pages.jsonl)."""
    return (folder / PAGES_FILE).is_file()


def worker_folders(given: Iterable[Path]) -> list[Path]:
    """The output folders to combine: each given folder, or the ``worker-<n>``
    folders in it (in number order); the same folder given twice is read
    once. ConfigError for a folder that is neither."""
    found: list[Path] = []
    for path in given:
        if not path.is_dir():
            raise ConfigError(f"{path}: no such folder")
        workers = sorted(
            (
                p
                for p in path.glob("worker-*")
                if p.is_dir() and p.name[len("worker-") :].isdigit()
            ),
            key=lambda p: int(p.name[len("worker-") :]),
        )
        outputs = [p for p in workers if is_output(p)]
        if is_output(path):
            outputs.insert(0, path)
        if not outputs:
            raise ConfigError(
                f"{path} is not a webspider output "
                f"(no {PAGES_FILE}, no worker-<n> folder holding one)"
            )
        found.extend(p.resolve() for p in outputs)
    return list(dict.fromkeys(found))


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_output(inputs: Iterable[Path], output: Path) -> None:
    """ConfigError unless ``output`` may be written: apart from every input
    (neither inside one nor holding one), and new, empty, or an earlier
    combination (which is replaced)."""
    out = output.resolve()
    for folder in inputs:
        if _within(out, folder) or _within(folder, out):
            raise ConfigError(
                f"output {output} and input {folder} overlap: "
                "give an output folder outside the inputs"
            )
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output {output} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not was_combined(out):
        raise ConfigError(
            f"output {output} is not empty and not the output of an earlier "
            "combination: give a new folder"
        )


def was_combined(folder: Path) -> bool:
    if (folder / COMBINING_MARK).is_file():
        return True
    try:
        data = json.loads((folder / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and COMBINED_FROM in data


def complete_lines(path: Path) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """(line, its JSON object or None when it is not one) of the file's
    complete lines; a last line without its newline (a write cut by a kill)
    is left out."""
    try:
        fh = path.open(encoding="utf-8", errors="surrogateescape", newline="\n")
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            if not line.endswith("\n"):
                return
            try:
                data = json.loads(line)
            except ValueError:
                yield line, None
                continue
            yield line, data if isinstance(data, dict) else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


# -- the files ----------------------------------------------------------------------
def _pages(inputs: list[Path], out: IO[str], result: Combined) -> list[dict[str, Any]]:
    """Write the combined pages.jsonl; its pages (the fields the summary
    needs), in the order written."""

    def lines(folder: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
        for line, data in complete_lines(folder / PAGES_FILE):
            if data is None or not isinstance(data.get("url"), str):
                result.unreadable += 1
                continue
            yield str(data.get("fetched_at") or ""), line, data

    pages: list[dict[str, Any]] = []
    seen: set[str] = set()
    merged = heapq.merge(*(lines(f) for f in inputs), key=lambda t: t[0])
    for _, line, data in merged:
        url = data["url"]
        if url in seen:
            result.repeated += 1
            continue
        seen.add(url)
        out.write(line)
        pages.append(
            {
                key: data.get(key)
                for key in (
                    "url",
                    "redirects",
                    "depth",
                    "round",
                    "size",
                    "content_type",
                    "content_hash",
                    "duplicate_of",
                )
            }
        )
    result.pages_lines = len(pages)
    return pages


def _first_per_url(
    inputs: list[Path], name: str, output: Path, fetched: Set[str] = frozenset()
) -> bool:
    """``name`` from every input, each URL once (the first line), less the
    ``depth`` lines of URLs ``fetched``; False when no input has it."""
    files = [f / name for f in inputs if (f / name).is_file()]
    if not files:
        return False
    seen: set[str] = set()
    with open_atomic(output / name) as out:
        for path in files:
            for line, data in complete_lines(path):
                if data is None or not isinstance(data.get("url"), str):
                    continue
                if data["url"] in seen:
                    continue
                if data.get("reason") == skips.DEPTH and data["url"] in fetched:
                    # left deferred when a worker paused, fetched by another
                    continue
                seen.add(data["url"])
                out.write(line)
    return True


def _newest(inputs: list[Path], name: str) -> Path | None:
    files = [f / name for f in inputs if (f / name).is_file()]
    return max(files, key=_mtime) if files else None


def _broken_links(inputs: list[Path], output: Path) -> list[dict[str, Any]] | None:
    """Write the combined broken-links.jsonl; its records (None: no input has
    the file)."""
    files = [f / BROKEN_LINKS_FILE for f in inputs if (f / BROKEN_LINKS_FILE).is_file()]
    if not files:
        return None
    best: dict[str, dict[str, Any]] = {}
    for path in files:
        for _, record in complete_lines(path):
            if record is None or not isinstance(record.get("url"), str):
                continue
            kept = best.get(record["url"])
            best[record["url"]] = record if kept is None else merge_broken(kept, record)
    records = [best[url] for url in sorted(best)]
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    with open_atomic(output / BROKEN_LINKS_FILE) as out:
        for record in records:
            out.write(dumps(record) + "\n")
    return records


def merge_broken(one: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """One broken URL's records from two files: the one with more referring
    pages (an older file has fewer), its referrers completed with the other's
    (in URL order, as many as the longer list: the ledger's cap), and
    ``referrer_count`` at least the referrers listed."""
    counts = [int(r.get("referrer_count") or 0) for r in (one, other)]
    kept = one if counts[0] >= counts[1] else other
    refs = {
        str(ref.get("url")): ref
        for r in (other, kept)  # kept's own win
        for ref in r.get("referrers") or ()
        if isinstance(ref, dict)
    }
    cap = max(len(one.get("referrers") or ()), len(other.get("referrers") or ()))
    referrers = [refs[url] for url in sorted(refs)][:cap]
    return {
        **kept,
        "referrer_count": max(*counts, len(refs)),
        "referrers": referrers,
    }


def _mirror_state(inputs: list[Path], output: Path) -> dict[str, Indexed]:
    """Write the combined mirror-state.jsonl (the export of the shared index a
    worker wrote last, a finished crawl's first); the index by file name."""
    exports = [
        f / MIRROR_STATE_FILE for f in inputs if (f / MIRROR_STATE_FILE).is_file()
    ]
    if not exports:
        return {}

    def rank(path: Path) -> tuple[bool, int]:
        last: dict[str, Any] = {}
        for _, data in complete_lines(path):
            if data is not None and "run" in data and "url" not in data:
                last = data
        return bool(last.get("finished")), _mtime(path)

    chosen = max(exports, key=rank)
    index: dict[str, Indexed] = {}
    root = str((output / MIRROR_DIR).resolve())
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    with open_atomic(output / MIRROR_STATE_FILE) as out:
        for number, (line, data) in enumerate(complete_lines(chosen)):
            if data is None:
                continue
            if number == 0 and "mirror_root" in data:
                out.write(dumps({**data, "mirror_root": root}) + "\n")
                continue
            out.write(line)
            if isinstance(data.get("path"), str) and isinstance(data.get("hash"), str):
                index[data["path"]] = Indexed(data["hash"], bool(data.get("converted")))
    return index


def _mirror_roots(inputs: list[Path]) -> list[Path]:
    """Each input's mirror: ``<input>/mirror``, else the ``mirror_root`` its
    mirror-state.jsonl names when that folder is on this machine."""
    roots: list[Path] = []
    for folder in inputs:
        root = folder / MIRROR_DIR
        if not root.is_dir():
            for _, data in complete_lines(folder / MIRROR_STATE_FILE):
                named = data.get("mirror_root") if data else None
                root = Path(str(named)) if named else root
                break
        if root.is_dir() and not root.is_symlink():
            roots.append(root)
    return roots


# -- the figures --------------------------------------------------------------------
def _time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def summarize(
    summaries: list[dict[str, Any]],
    pages: list[dict[str, Any]],
    broken: list[dict[str, Any]] | None,
    outputs: dict[str, str],
) -> Summary:
    """The combined crawl's figures (see the module's docstring)."""

    def total(key: str, inner: str | None = None) -> int:
        n = 0
        for s in summaries:
            value = s.get(key)
            if inner is not None:
                value = value.get(inner) if isinstance(value, dict) else 0
            n += value if isinstance(value, int) else 0
        return n

    def counters(key: str, inner: str | None = None) -> Counter[str]:
        added: Counter[str] = Counter()
        for s in summaries:
            value = s.get(key)
            if inner is not None and isinstance(value, dict):
                value = value.get(inner)
            if isinstance(value, dict):
                added.update({k: v for k, v in value.items() if isinstance(v, int)})
        return added

    started = [t for s in summaries if (t := _time(s.get("started_at")))]
    finished = [t for s in summaries if (t := _time(s.get("finished_at")))]
    reasons = [s.get("finish_reason") for s in summaries]
    # the crawl ends when the shared queue is empty: then every live worker
    # closes with "finished"; a killed worker's summary says null
    reason = "finished" if "finished" in reasons else next(filter(None, reasons), None)
    newest = max(summaries, key=lambda s: str(s.get("finished_at") or ""), default={})
    urls = {p["url"] for p in pages}
    for page in pages:
        urls.update(r for r in page.get("redirects") or () if isinstance(r, str))
    broken = broken or []
    anchors = sum(1 for r in broken if r.get("error") == "missing_anchor")
    external = sum(1 for r in broken if not r.get("internal"))
    urls.update(
        r["url"]
        for r in broken
        if r.get("internal") and r.get("error") != "missing_anchor"
    )
    duplicates = [p for p in pages if p.get("duplicate_of")]
    normalized = min(
        len(duplicates),
        max(
            (
                int(s.get("duplicates", {}).get("normalized") or 0)
                for s in summaries
                if isinstance(s.get("duplicates"), dict)
            ),
            default=0,
        ),
    )
    limits = counters("limits")
    skipped = dict(counters("skipped", "by_reason"))
    # Every worker records the URLs the shared frontier still holds as it
    # ends: the crawl's are the newest's (as deferred.jsonl), not the sum.
    skipped.pop(skips.DEPTH, None)
    left = int(newest.get("deferred_remaining") or 0)
    if left:
        skipped[skips.DEPTH] = left
    return Summary(
        start_urls=list(
            next((s["start_urls"] for s in summaries if s.get("start_urls")), [])
        ),
        started_at=min(started).isoformat() if started else "",
        finished_at=max(finished).isoformat() if finished else "",
        finish_reason=reason,
        elapsed_seconds=(max(finished) - min(started)).total_seconds()
        if started and finished
        else 0.0,
        pages=len(pages),
        urls_seen=len(urls),
        links=total("links"),
        requests=total("requests"),
        bytes=total("bytes"),
        broken_internal=len(broken) - external,
        broken_external=external,
        missing_anchors=anchors,
        duplicates_exact=len(duplicates) - normalized,
        duplicates_normalized=normalized,
        skipped=skipped,
        rounds=max((int(s.get("rounds") or 0) for s in summaries), default=0),
        deferred_remaining=int(newest.get("deferred_remaining") or 0),
        status_codes={
            int(k): v for k, v in counters("status_codes").items() if k.isdigit()
        },
        outputs=outputs,
        links_capped_pages=limits["links_capped_pages"],
        parse_budget_pages=limits["parse_budget_pages"],
        body_memory_waits=limits["body_memory_waits"],
        body_memory_max_bytes=max(
            (
                int(s["limits"].get("body_memory_max_bytes") or 0)
                for s in summaries
                if isinstance(s.get("limits"), dict)
            ),
            default=0,
        ),
    )


def build_report(
    summary: Summary,
    pages: list[dict[str, Any]],
    broken: list[dict[str, Any]] | None,
    largest: int,
) -> Report:
    hashes = {p["url"]: p.get("content_hash") for p in pages}
    duplicates = sorted(
        (
            p["url"],
            str(p["duplicate_of"]),
            "exact"
            if hashes.get(p["duplicate_of"]) == p.get("content_hash")
            else "normalized",
        )
        for p in pages
        if p.get("duplicate_of")
    )[:MAX_ROWS]
    shown = heapq.nlargest(
        MAX_ROWS,
        broken or (),
        key=lambda r: (bool(r.get("internal")), int(r.get("referrer_count") or 0)),
    )
    return Report(
        summary=summary,
        pages_by_depth=dict(Counter(int(p.get("depth") or 0) for p in pages)),
        pages_by_round=dict(Counter(int(p.get("round") or 0) for p in pages)),
        broken=[
            {**r, "referrers": (r.get("referrers") or [])[:MAX_REFERRERS_SHOWN]}
            for r in shown
        ],
        duplicates=duplicates,
        largest=heapq.nlargest(
            largest,
            ((int(p.get("size") or 0), p["url"], p.get("content_type")) for p in pages),
        ),
        title="Crawl report (combined)",
    )


# -- the whole ----------------------------------------------------------------------
def combine(
    inputs: list[Path], output: Path, largest: int = 20, given: Iterable[Path] = ()
) -> Combined:
    """Combine the output folders ``inputs`` (see worker_folders; ``given``:
    the folders named, which may hold them) into ``output`` (see
    check_output), which is created or replaced."""
    check_output([*(p.resolve() for p in given), *inputs], output)
    output.mkdir(parents=True, exist_ok=True)
    (output / COMBINING_MARK).touch()
    summaries = [_read_json(f / SUMMARY_FILE) for f in inputs]
    result = Combined(inputs=inputs, summary=Summary())
    with open_atomic(output / PAGES_FILE) as out:
        pages = _pages(inputs, out, result)
    mirror = output / MIRROR_DIR
    if mirror.exists():  # an earlier combination's
        shutil.rmtree(mirror)
    index = _mirror_state(inputs, output)
    roots = _mirror_roots(inputs)
    if roots:
        result.mirror = combine_mirrors(roots, mirror, index)
        if index:
            result.fixed = fix_up_combined(mirror, output / MIRROR_STATE_FILE)
    broken = _broken_links(inputs, output)
    _first_per_url(inputs, CHANGES_FILE, output)
    _first_per_url(inputs, SKIPPED_FILE, output, {p["url"] for p in pages})
    deferred = _newest(inputs, DEFERRED_FILE)
    if deferred is not None:
        shutil.copyfile(deferred, output / DEFERRED_FILE)
    outputs = {"pages": str(output / PAGES_FILE)}
    if broken is not None:
        outputs["broken_links"] = str(output / BROKEN_LINKS_FILE)
    if (output / SKIPPED_FILE).exists():
        outputs["skipped"] = str(output / SKIPPED_FILE)
    outputs["summary"] = str(output / SUMMARY_FILE)
    outputs["report"] = str(output / REPORT_FILE)
    summary = summarize(summaries, pages, broken, outputs)
    result.summary = summary
    data = {**summary.as_dict(), COMBINED_FROM: [os.fspath(f) for f in inputs]}
    write_atomic(
        output / SUMMARY_FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    )
    write_atomic(
        output / REPORT_FILE, render(build_report(summary, pages, broken, largest))
    )
    return result
