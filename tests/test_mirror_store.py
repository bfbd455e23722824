"""The mirror store's choices for a shared crawl's workers: which folders
are the other workers', and which export an update crawl imports."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from webspider.mirror.changes import change_line
from webspider.mirror.siblings import last_export, sibling_outputs

if TYPE_CHECKING:
    from pathlib import Path


def export(path: Path, run: int, finished: bool, mtime: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"mirror_root": "/x", "version": 1}, {"run": run, "finished": finished}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    os.utime(path, ns=(mtime, mtime))
    return path


def test_the_other_workers_folders_are_those_beside_a_held_worker_folder(tmp_path):
    for name in ("worker-1", "worker-2", "worker-10", "worker-x", "other"):
        (tmp_path / name).mkdir()
    (tmp_path / "worker-3").write_text("a file, not a folder")
    (tmp_path / "worker-2.lock").touch()
    assert sibling_outputs(tmp_path / "worker-2") == [
        tmp_path / "worker-1",
        tmp_path / "worker-10",
    ]
    # not a worker folder (no lock beside it): a crawl of its own
    assert sibling_outputs(tmp_path / "worker-1") == []
    assert sibling_outputs(tmp_path / "other") == []


def test_the_export_imported_is_the_last_runs_finished_newest(tmp_path):
    own = tmp_path / "w1" / "mirror-state.jsonl"
    assert last_export([own, tmp_path / "w2" / "x.jsonl"]) == own  # none exists
    # this worker left the crawl early: its export is older and unfinished
    export(own, 1, False, 1_000)
    done_early = export(tmp_path / "w2" / "mirror-state.jsonl", 1, True, 2_000)
    done_last = export(tmp_path / "w3" / "mirror-state.jsonl", 1, True, 3_000)
    assert last_export([own, done_early, done_last]) == done_last
    assert last_export([own, done_early]) == done_early
    # a later run counts first; a cut or foreign file counts last
    later = export(tmp_path / "w4" / "mirror-state.jsonl", 2, False, 500)
    assert last_export([own, done_last, later]) == later
    (tmp_path / "w5").mkdir()
    cut = tmp_path / "w5" / "mirror-state.jsonl"
    cut.write_text('{"mirror_root": "/x"}\n{"run": 9, "fini')
    assert last_export([cut, own]) == own


@pytest.mark.parametrize(
    "url", ["http://a.test/b", 'http://\u00e9.test/"\\\x00\u2028\t', ""]
)
@pytest.mark.parametrize("path", [None, (), ("a.test", "b.html"), ("\u00e9", '"\x7f')])
@pytest.mark.parametrize("change", ["new", "gone"])
def test_change_line_is_the_json_of_its_fields(url, path, change):
    line = {"url": url, "change": change, "path": "/".join(path) if path else None}
    assert change_line(url, change, path) == json.dumps(line, ensure_ascii=False) + "\n"
