"""The fix-up shared with another process (webspider.mirror.fixup,
``FixUp.run_shared``): the same files and records as the fix-up alone,
whoever wrote which file, and when the other process stops answering."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_f_from_coro_f

from webspider.mirror.fixup import SHARED_BATCH, FixUp
from webspider.mirror.safefs import SafeTree
from webspider.mirror.state import MirrorState, TargetIndex
from webspider.pageworker.worker import Worker
from webspider.records import MemoryRecordStore

if TYPE_CHECKING:
    from pathlib import Path

#: more than two batches each side, and a chunk that is not a whole number
#: of batches
PAGES = 4 * SHARED_BATCH + 5


def page(n: int) -> str:
    # a link kept where /p/<n+1>'s file was expected (it became p/<n+1>.html),
    # one to a page that never turned up, one left absolute (mirrored since)
    return (
        f'<html><body><a href="p/{n + 1}">next</a> <a href="gone/{n}">gone</a> '
        f'<a href="http://site.test/q/{n}#top">q</a></body></html>'
    )


def make_mirror(tmp_path: Path) -> tuple[MirrorState, SafeTree]:
    """A mirror whose PAGES pages were all written before what they link to."""
    mirror = tmp_path / "mirror"
    (mirror / "site.test/p").mkdir(parents=True)
    (mirror / "site.test/q").mkdir(parents=True)
    export = tmp_path / "mirror-state.jsonl"
    lines: list[dict[str, Any]] = [{"mirror_root": str(mirror.resolve()), "version": 1}]
    for n in range(PAGES):
        (mirror / f"site.test/{n}.html").write_text(page(n))
        (mirror / f"site.test/p/{n + 1}.html").write_text("p")
        (mirror / f"site.test/q/{n}.html").write_text("q")
        lines.append(
            {
                "url": f"http://site.test/{n}",
                "path": f"site.test/{n}.html",
                "hash": "0" * 64,
                "size": 1,
                "kind": "html",
                "encoding": "utf-8",
                "converted": True,
                "pending": [f"http://site.test/q/{n}"],
                "kept": {
                    f"http://site.test/p/{n + 1}": f"site.test/p/{n + 1}",
                    f"http://site.test/gone/{n}": f"site.test/gone/{n}",
                },
            }
        )
        for target in (f"p/{n + 1}", f"q/{n}"):
            lines.append(
                {
                    "url": f"http://site.test/{target}",
                    "path": f"site.test/{target}.html",
                    "hash": "0" * 64,
                    "size": 1,
                }
            )
    lines.append({"run": 1, "finished": False})
    export.write_text("".join(json.dumps(line) + "\n" for line in lines))
    state = MirrorState(MemoryRecordStore(), str(mirror.resolve()))
    state.import_file(export)
    return state, SafeTree(mirror)


class InProcessWorker:
    """The page worker's fix-up (its ``Worker.handle``), answered on the
    event loop as the real one's answers come; ``fails_after`` batches, it
    answers None (it died)."""

    def __init__(self, root: Path, fails_after: int | None = None) -> None:
        self.worker = Worker()
        self.worker.init(
            {"mirror": {"root": str(root), "forbidden": [], "keep_originals": False}}
        )
        self.fails_after = fails_after
        self.pages = 0
        self.batches = 0

    async def fix_files(
        self, jobs: list[dict[str, Any]], targets: dict[str, Any]
    ) -> list[dict[str, Any]] | None:
        await asyncio.sleep(0.001)
        self.batches += 1
        if self.fails_after is not None and self.batches > self.fails_after:
            return None
        # through JSON, as over the pipe
        header = json.loads(
            json.dumps({"op": "fixup", "id": 1, "jobs": jobs, "targets": targets})
        )
        answer, _ = self.worker.handle(header, b"")
        self.pages += len(answer["fixed"])
        return json.loads(json.dumps(answer))["fixed"]


def outcome(state: MirrorState, tree: SafeTree, root: Path) -> tuple[Any, ...]:
    files = {
        str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.html"))
    }
    index = dict(state.index.items())
    pending = dict(state.pending.items())
    return files, index, pending


@deferred_f_from_coro_f
async def test_shared_fix_up_gives_what_the_fix_up_alone_gives(tmp_path: Path):
    alone_state, alone_tree = make_mirror(tmp_path / "alone")
    alone = FixUp(alone_state, alone_tree, print).run()
    shared_state, shared_tree = make_mirror(tmp_path / "shared")
    root = tmp_path / "shared" / "mirror"
    worker = InProcessWorker(root)
    shared = await FixUp(shared_state, shared_tree, print).run_shared(worker)

    assert (
        (shared.pages, shared.links) == (alone.pages, alone.links) == (PAGES, 3 * PAGES)
    )
    # both did part of the work
    assert 0 < worker.pages < PAGES
    assert outcome(shared_state, shared_tree, root) == outcome(
        alone_state, alone_tree, tmp_path / "alone" / "mirror"
    )
    fixed = (root / "site.test/0.html").read_text()
    assert 'href="p/1.html"' in fixed
    assert 'href="http://site.test/gone/0"' in fixed
    assert 'href="q/0.html#top"' in fixed
    # done again: nothing left to change
    again = await FixUp(shared_state, shared_tree, print).run_shared(worker)
    assert again.pages == 0


@deferred_f_from_coro_f
async def test_a_worker_that_stops_answering_leaves_its_pages_to_the_crawl(
    tmp_path: Path,
):
    alone_state, alone_tree = make_mirror(tmp_path / "alone")
    FixUp(alone_state, alone_tree, print).run()
    shared_state, shared_tree = make_mirror(tmp_path / "shared")
    root = tmp_path / "shared" / "mirror"
    worker = InProcessWorker(root, fails_after=1)
    shared = await FixUp(shared_state, shared_tree, print).run_shared(worker)

    assert shared.pages == PAGES
    # its first batch only: the second failed. Two batches are asked at a
    # time, so a third may have been asked before the failed answer was
    # read (when the first came back first); none after
    assert 0 < worker.pages <= SHARED_BATCH
    assert 2 <= worker.batches <= 3
    assert outcome(shared_state, shared_tree, root) == outcome(
        alone_state, alone_tree, tmp_path / "alone" / "mirror"
    )


def test_a_subset_of_the_targets_knows_the_redirects_of_its_urls():
    index = TargetIndex(
        aliases={"http://a/old": "http://a/new", "http://a/x": "http://a/y"},
        where={"http://a/new": 1, "http://a/y": "y.html", "http://a/z": 1},
    )
    part = index.subset(["http://a/old", "http://a/z", "http://a/none"])
    assert part.aliases == {"http://a/old": "http://a/new"}
    assert part.where == {"http://a/new": 1, "http://a/z": 1}
    for url in ("http://a/old", "http://a/z", "http://a/none"):
        assert part.get(url) == index.get(url)
