"""The fix-up of a combined mirror (webspider.mirror.combine.fix_up_combined):
links a worker left as written, because another worker wrote their files
after it stopped, lead to those files once combined."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from webspider.mirror.combine import fix_up_combined

if TYPE_CHECKING:
    from pathlib import Path

PAGE = (
    '<html><body><a href="p/7">seven</a> <a href="http://site.test/p/8#top">'
    'eight</a> <a href="http://site.test/p/9">nine</a></body></html>'
)


def entry(url: str, path: str, **extra: object) -> dict[str, object]:
    return {"url": url, "path": path, "hash": "0" * 64, "size": 1, "kind": "html",
            "encoding": "utf-8", **extra}  # fmt: skip


def test_links_left_as_written_lead_to_the_files_of_the_others(tmp_path: Path):
    mirror = tmp_path / "mirror"
    (mirror / "site.test/p").mkdir(parents=True)
    (mirror / "site.test/index.html").write_text(PAGE)
    for n in (7, 8):
        (mirror / f"site.test/p/{n}.html").write_text(f"<html>{n}</html>")
    export = tmp_path / "mirror-state.jsonl"
    records = [
        {"mirror_root": str(mirror.resolve()), "version": 1},
        # the home page, written before p/7 and p/8 were: a relative link
        # kept where p/7's file was expected, p/8 and p/9 left absolute
        entry(
            "http://site.test/",
            "site.test/index.html",
            converted=True,
            pending=["http://site.test/p/8", "http://site.test/p/9"],
            kept={"http://site.test/p/7": "site.test/p/7"},
        ),
        entry("http://site.test/p/7", "site.test/p/7.html"),
        entry("http://site.test/p/8", "site.test/p/8.html"),
        {"run": 1, "finished": True},
    ]
    export.write_text("".join(json.dumps(r) + "\n" for r in records))

    done = fix_up_combined(mirror, export)

    assert (done.pages, done.links) == (1, 2)
    assert (mirror / "site.test/index.html").read_text() == PAGE.replace(
        '"p/7"', '"p/7.html"'
    ).replace("http://site.test/p/8#top", "p/8.html#top")
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    assert lines[0]["mirror_root"] == str(mirror.resolve())
    home = next(line for line in lines if line.get("url") == "http://site.test/")
    # what is left: the page that was never mirrored
    assert (home["pending"], home["kept"]) == (["http://site.test/p/9"], {})
    assert lines[-1] == {"run": 1, "finished": True}
    # done again: nothing left to change
    assert fix_up_combined(mirror, export).pages == 0
