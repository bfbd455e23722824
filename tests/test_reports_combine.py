"""webspider.reports.combine on hand-made worker folders: a URL in two
workers' files, a partial last line, mirror copies that differ, bad input."""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

import pytest

from webspider.config import ConfigError
from webspider.reports.combine import check_output, combine, worker_folders

if TYPE_CHECKING:
    from pathlib import Path

SITE = "http://s.test"


def page(path: str, fetched_at: str, **extra: object) -> dict[str, object]:
    return {
        "url": f"{SITE}{path}",
        "redirects": [],
        "status": 200,
        "depth": path.count("/") - 1,
        "round": 0,
        "referer": None,
        "content_type": "text/html",
        "size": 10,
        "content_hash": hashlib.sha256(path.encode()).hexdigest(),
        "duplicate_of": None,
        "title": None,
        "links": 1,
        "path": None,
        "fetched_at": fetched_at,
        "noindex": False,
        **extra,
    }


def lines(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def write(path: Path, text: str | bytes, mtime: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def summary(**figures: object) -> str:
    return json.dumps(
        {
            "start_urls": [f"{SITE}/"],
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:01:00+00:00",
            "finish_reason": "finished",
            "requests": 3,
            "bytes": 30,
            "links": 4,
            "status_codes": {"200": 3},
            "skipped": {"total": 1, "by_reason": {"robots": 1}},
            **figures,
        }
    )


@pytest.fixture
def workers(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    one, two = out / "worker-1", out / "worker-2"
    write(
        one / "pages.jsonl",
        lines(page("/", "2026-01-01T00:00:01"), page("/a", "2026-01-01T00:00:03"))
        # killed mid-line: never complete, never read
        + '{"url": "http://s.test/cut", "sta',
    )
    write(
        two / "pages.jsonl",
        lines(
            page("/b", "2026-01-01T00:00:02", duplicate_of=f"{SITE}/"),
            # /a again: fetched again after worker 1's kill, the first line kept
            page("/a", "2026-01-01T00:00:05"),
        )
        + "not json\n",
    )
    write(one / "summary.json", summary(finish_reason=None, finished_at=""))
    write(two / "summary.json", summary(duplicates={"exact": 1, "normalized": 0}))
    broken = {"url": f"{SITE}/gone", "status": 404, "error": None, "internal": True}
    ref = {"text": "x", "tag": "a"}
    write(
        one / "broken-links.jsonl",
        lines(
            {**broken, "referrer_count": 1, "referrers": [{"url": f"{SITE}/", **ref}]}
        ),
    )
    write(
        two / "broken-links.jsonl",
        lines(
            {
                **broken,
                "referrer_count": 2,
                "referrers": [{"url": f"{SITE}/", **ref}, {"url": f"{SITE}/a", **ref}],
            }
        ),
    )
    # the same name in both mirrors: a converted page (the newer copy wins),
    # an image (the copy with the index's hash wins, though older)
    write(one / "mirror/s.test/index.html", "<a href=a.html>", mtime=1_000)
    write(two / "mirror/s.test/index.html", "<a href=a.html>fixed", mtime=2_000)
    write(one / "mirror/s.test/i.png", b"right", mtime=1_000)
    write(two / "mirror/s.test/i.png", b"stale", mtime=2_000)
    write(one / "mirror/s.test/a.html", "a")
    write(two / "mirror/s.test/b.html", "b")
    write(two / "mirror/s.test/%~tmp0123", "half")
    state = [
        {"mirror_root": str(two / "mirror"), "version": 1},
        {
            "url": f"{SITE}/",
            "path": "s.test/index.html",
            "hash": "0",
            "converted": True,
        },
        {
            "url": f"{SITE}/i.png",
            "path": "s.test/i.png",
            "hash": hashlib.sha256(b"right").hexdigest(),
            "converted": False,
        },
        {"run": 1, "finished": True},
    ]
    write(two / "mirror-state.jsonl", lines(*state))
    write(one / "mirror-state.jsonl", lines(*state[:2], {"run": 1, "finished": False}))
    return out


def test_each_url_once_and_the_mirror_union(workers: Path, tmp_path: Path) -> None:
    target = tmp_path / "combined"
    inputs = worker_folders([workers])
    assert [p.name for p in inputs] == ["worker-1", "worker-2"]
    result = combine(inputs, target)
    pages = [
        json.loads(line) for line in (target / "pages.jsonl").read_text().splitlines()
    ]
    # in fetched_at order, /a from its first fetch, the cut line left out
    assert [(p["url"], p["fetched_at"]) for p in pages] == [
        (f"{SITE}/", "2026-01-01T00:00:01"),
        (f"{SITE}/b", "2026-01-01T00:00:02"),
        (f"{SITE}/a", "2026-01-01T00:00:03"),
    ]
    assert (result.repeated, result.unreadable) == (1, 1)
    mirror = target / "mirror" / "s.test"
    assert sorted(p.name for p in mirror.iterdir()) == [
        "a.html",
        "b.html",
        "i.png",
        "index.html",
    ]
    assert (mirror / "index.html").read_text() == "<a href=a.html>fixed"
    assert (mirror / "i.png").read_bytes() == b"right"
    assert (result.mirror.files, result.mirror.shared) == (4, 2)
    state = (target / "mirror-state.jsonl").read_text().splitlines()
    assert json.loads(state[0])["mirror_root"] == str((target / "mirror").resolve())
    assert json.loads(state[-1]) == {"run": 1, "finished": True}
    [broken] = [
        json.loads(line)
        for line in (target / "broken-links.jsonl").read_text().splitlines()
    ]
    assert broken["referrer_count"] == 2
    assert [r["url"] for r in broken["referrers"]] == [f"{SITE}/", f"{SITE}/a"]
    data = json.loads((target / "summary.json").read_text())
    assert data["pages"] == 3
    assert data["urls_seen"] == 4  # 3 pages and the broken URL
    assert data["finish_reason"] == "finished"
    assert data["duplicates"] == {"total": 1, "exact": 1, "normalized": 0}
    assert data["broken"]["internal"] == 1
    assert (data["requests"], data["bytes"], data["links"]) == (6, 60, 8)
    assert data["status_codes"] == {"200": 6}
    assert data["skipped"] == {"total": 2, "by_reason": {"robots": 2}}
    assert data["combined_from"] == [str(p) for p in inputs]
    report = (target / "report.html").read_text()
    assert f"{SITE}/gone" in report
    # the inputs are untouched
    assert (workers / "worker-2/mirror/s.test/i.png").read_bytes() == b"stale"
    # combining again into the same folder replaces the combination
    combine(inputs, target)
    assert len((target / "pages.jsonl").read_text().splitlines()) == 3


def test_bad_inputs_and_outputs(workers: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such folder"):
        worker_folders([tmp_path / "nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="is not a webspider output"):
        worker_folders([tmp_path / "empty"])
    inputs = worker_folders([workers])
    with pytest.raises(ConfigError, match="overlap"):
        combine(inputs, workers / "combined", given=[workers])
    assert not (workers / "combined").exists()
    with pytest.raises(ConfigError, match="overlap"):
        check_output(inputs, workers / "worker-2" / "x")
    with pytest.raises(ConfigError, match="overlap"):
        check_output(inputs, workers)
    write(tmp_path / "other/notes.txt", "mine")
    with pytest.raises(ConfigError, match="not empty"):
        check_output(inputs, tmp_path / "other")
    assert (tmp_path / "other/notes.txt").read_text() == "mine"
    # the same folder given twice (or as itself and as its parent) is read once
    assert worker_folders([workers, workers / "worker-1"]) == inputs


def test_urls_left_deferred_are_skipped_once(tmp_path: Path) -> None:
    """Each worker records what the shared frontier still holds as it ends:
    the combination counts it once (the newest worker's deferred_remaining),
    and lists it once, less what another worker fetched after one paused."""
    out = tmp_path / "out"
    one, two = out / "worker-1", out / "worker-2"
    write(one / "pages.jsonl", lines(page("/", "2026-01-01T00:00:01")))
    write(two / "pages.jsonl", lines(page("/a", "2026-01-01T00:00:02")))
    # worker 1 paused early, with /a and /b deferred; worker 2 fetched /a
    # and ended with /b and /c deferred
    write(
        one / "summary.json",
        summary(
            finish_reason="shutdown",
            finished_at="2026-01-01T00:00:30+00:00",
            skipped={"total": 3, "by_reason": {"robots": 1, "depth": 2}},
            deferred_remaining=2,
        ),
    )
    write(
        two / "summary.json",
        summary(
            skipped={"total": 3, "by_reason": {"robots": 1, "depth": 2}},
            deferred_remaining=2,
        ),
    )

    def skip(path: str, reason: str) -> dict[str, object]:
        return {"url": f"{SITE}{path}", "reason": reason, "referer": f"{SITE}/"}

    write(
        one / "skipped.jsonl",
        lines(skip("/r", "robots"), skip("/a", "depth"), skip("/b", "depth")),
    )
    write(
        two / "skipped.jsonl",
        lines(skip("/r", "robots"), skip("/b", "depth"), skip("/c", "depth")),
    )
    target = tmp_path / "combined"
    combine(worker_folders([out]), target)
    data = json.loads((target / "summary.json").read_text())
    assert data["skipped"] == {"total": 4, "by_reason": {"robots": 2, "depth": 2}}
    assert data["deferred_remaining"] == 2
    listed = [
        (r["url"][len(SITE) :], r["reason"])
        for r in map(json.loads, (target / "skipped.jsonl").read_text().splitlines())
    ]
    assert listed == [("/r", "robots"), ("/b", "depth"), ("/c", "depth")]
