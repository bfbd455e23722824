"""``scrapy combine`` stopped halfway, then the same command again.

Two hand-made worker folders, one with a mirror of many files (so copying
it takes a while); the command is interrupted with Ctrl-C once the combined
``pages.jsonl`` is in place — the output is then neither empty nor a
finished combination — and run again. Asserted on the exit statuses,
stderr and the files on disk.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from tests.support.cli import start_apart

if TYPE_CHECKING:
    from pathlib import Path

SITE = "http://s.test"
#: mirror files of worker-1: copying them must outlast the test's Ctrl-C,
#: which a loaded machine may deliver late (6,000, copied in ~0.5 s, let one
#: CI run finish the combination before the signal came)
FILES = 20000


def worker(folder: Path, paths: list[str], mirror_files: int) -> None:
    folder.mkdir(parents=True)
    (folder / "pages.jsonl").write_text(
        "".join(
            json.dumps({"url": f"{SITE}{p}", "status": 200, "depth": 1, "round": 0})
            + "\n"
            for p in paths
        )
    )
    (folder / "summary.json").write_text(
        json.dumps({"start_urls": [f"{SITE}/"], "finish_reason": "finished"})
    )
    site = folder / "mirror" / "s.test"
    site.mkdir(parents=True)
    for i in range(mirror_files):
        (site / f"{i}.html").write_text(f"<p>{i}</p>")


def combine(*args: str) -> subprocess.Popen[str]:
    return start_apart([sys.executable, "-m", "scrapy", "combine", *args])


def test_a_combination_stopped_halfway_is_replaced_by_the_same_command(
    tmp_path: Path,
) -> None:
    workers = tmp_path / "out"
    worker(workers / "worker-1", ["/", "/a"], FILES)
    worker(workers / "worker-2", ["/b"], 1)
    combined = tmp_path / "combined"
    first = combine(str(workers), "-o", str(combined))
    deadline = time.monotonic() + 60
    while not (combined / "pages.jsonl").exists():
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "no combined pages.jsonl"
        time.sleep(0.002)
    first.send_signal(signal.SIGINT)
    _, stderr = first.communicate(timeout=60)
    assert first.returncode == 130, stderr[-2000:]
    assert stderr.splitlines()[-1] == (
        f"webspider: interrupted: {combined} is incomplete; run the same "
        "command again to combine"
    )
    assert "Traceback" not in stderr
    # stopped halfway: not all of the mirror, no summary yet
    copied = list((combined / "mirror" / "s.test").glob("*.html"))
    assert len(copied) < FILES
    assert not (combined / "summary.json").exists()

    again = combine(str(workers), "-o", str(combined))
    _, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr[-2000:]
    lines = (combined / "pages.jsonl").read_text().splitlines()
    pages = [json.loads(line)["url"] for line in lines]
    assert sorted(pages) == [f"{SITE}/", f"{SITE}/a", f"{SITE}/b"]
    assert len(list((combined / "mirror" / "s.test").glob("*.html"))) == FILES
    summary = json.loads((combined / "summary.json").read_text())
    assert len(summary["combined_from"]) == 2
