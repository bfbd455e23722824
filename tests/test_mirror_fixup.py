"""The fix-up shared with another process (webspider.mirror.fixup,
``FixUp.run_shared``): the same files and records as the fix-up alone,
whoever wrote which file, and when the other process stops answering."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from webspider.mirror import fixup, links
from webspider.mirror.entry import Entry
from webspider.mirror.fixup import SHARED_BATCH, FixUp, keeps_spans, packed_spans
from webspider.mirror.links import convert
from webspider.mirror.paths import url_path
from webspider.mirror.safefs import SafeTree
from webspider.mirror.state import MirrorState
from webspider.mirror.targets import TargetIndex
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


def large_page_mirror(root: Path) -> tuple[MirrorState, SafeTree, tuple[str, ...]]:
    """A page of 2 kB whose links all wait for their files by target
    (webspider.mirror.awaited), recorded as MirrorStore.written records it:
    with its spans when that is large (SPANS_KEPT_FROM), else without a
    record."""
    url = "http://site.test/"
    body = b"<html><body>" + b"".join(
        b'<a href="/p/%d?n=1">%d</a> <a href="/p/%d?n=1#x">x</a>\n' % (i, i, i)
        for i in range(40)
    )
    state = MirrorState(MemoryRecordStore(), str(root))
    tree = SafeTree(root)
    source = ("site.test", "index.html")
    written = convert(
        body, state, source, page_url=url, base_url=url, encoding="utf-8", html=True
    )
    assert written.plain and set(written.plain) == set(written.kept)
    tree.write(source, written.data)
    entry = Entry(
        url=url,
        path=source,
        hash="",
        size=len(body),
        kind="html",
        encoding="utf-8",
        converted=True,
        restore=written.restore,
    )
    spans = keeps_spans(entry.size, False, True)
    state.put(entry, packed_spans(written) if spans else None, written.plain)
    return state, tree, source


@pytest.mark.parametrize("size", [1000, 10**9])
def test_only_a_large_page_keeps_the_spans_of_links_waiting_by_target(
    monkeypatch, size
):
    monkeypatch.setattr(fixup, "SPANS_KEPT_FROM", size)
    assert keeps_spans(size, False, True)
    assert not keeps_spans(size - 1, False, True)
    assert not keeps_spans(size, False, False)
    assert keeps_spans(0, True, False)


def test_a_large_page_is_fixed_up_from_its_spans_as_by_a_scan(tmp_path, monkeypatch):
    """Its links all wait by target, so it had no pending record: the fix-up
    scanned it and decided every link of it again (the giant-page test: 40 s
    for 500,000 links, 50,000 of them waiting)."""
    results = []
    for spans in (False, True):
        monkeypatch.setattr(fixup, "SPANS_KEPT_FROM", 1000 if spans else 10**9)
        root = tmp_path / f"spans-{spans}"
        state, tree, _ = large_page_mirror(root)
        assert (state.pending.get("http://site.test/") is not None) is spans
        for i in range(0, 40, 2):  # half the links' files turn up
            target = f"http://site.test/p/{i}?n=1"
            state.put(Entry(url=target, path=url_path(target), hash="", size=0))
        if spans:  # no scan, no rewrite of the whole page
            monkeypatch.setattr(links, "_rewrite", None)
        done = FixUp(state, tree, print).run()
        assert (done.pages, done.links) == (1, 40)
        results.append(outcome(state, tree, root))
    assert results[0] == results[1]
    fixed = (tmp_path / "spans-True" / "site.test/index.html").read_text()
    assert 'href="p/0@n=1#x"' in fixed
    assert 'href="http://site.test/p/1?n=1#x"' in fixed


def test_a_large_page_whose_links_all_landed_keeps_no_record(tmp_path, monkeypatch):
    monkeypatch.setattr(fixup, "SPANS_KEPT_FROM", 1000)
    state, tree, source = large_page_mirror(tmp_path)
    assert state.pending.count() == 1
    before = tree.read(source)
    for i in range(40):
        target = f"http://site.test/p/{i}?n=1"
        state.put(Entry(url=target, path=url_path(target), hash="", size=0))
    assert FixUp(state, tree, print).run().pages == 0
    assert tree.read(source) == before
    assert state.pending.count() == 0


#: a page linking a folder URL, a .html-less URL and a URL with a query of
#: its own site, none answered when it is written: relative values whose URL
#: is not the value joined with the page's (so its restore map keeps them)
RESTORED_PAGE = (
    b'<html><body><a href="/gone/">a</a> <a href="/gone/#x">b</a> '
    b'<a href="/away">c</a> <a href="/p/1?n=1">d</a> <a href="/here">e</a>'
    b"</body></html>"
)
RESTORED_GONE = ("http://site.test/gone/", "http://site.test/away")


def restored_mirror(root: Path, absent_first: bool, killed: bool = False) -> Any:
    """RESTORED_PAGE written (as MirrorStore.written records it) before the
    404s of RESTORED_GONE came (``absent_first``: after), /here mirrored
    after it, then the end's fix-up; ``killed``: a first fix-up wrote the
    file and was killed before its records were committed. Returns the
    file, the page's restore map and its line of the export."""
    url = "http://site.test/"
    state = MirrorState(MemoryRecordStore(), str(root))
    tree = SafeTree(root)
    source = ("site.test", "index.html")
    if absent_first:
        for gone in RESTORED_GONE:
            state.mark_absent(gone)
    written = convert(
        RESTORED_PAGE,
        state,
        source,
        page_url=url,
        base_url=url,
        encoding="utf-8",
        html=True,
    )
    tree.write(source, written.data)
    entry = Entry(
        url=url,
        path=source,
        hash="",
        size=len(RESTORED_PAGE),
        kind="html",
        encoding="utf-8",
        converted=written.count > 0,
        pending=sorted(written.pending),
        restore=written.restore,
    )
    spans = keeps_spans(entry.size, bool(entry.pending), bool(written.plain))
    state.put(entry, packed_spans(written) if spans else None, written.plain)
    for gone in RESTORED_GONE:
        state.mark_absent(gone)
    here = "http://site.test/here"
    state.put(Entry(url=here, path=url_path(here), hash="", size=0))
    if killed:
        state.gather()
        fix_up = FixUp(state, tree, print)
        jobs, targets = fix_up._prepare(list(state.pending.items()))
        for job in jobs:  # the files written, nothing recorded
            fixup.fix_file(tree, job.entry, targets, job.remembered)
    FixUp(state, tree, print).run()
    export = root.parent / f"{root.name}.jsonl"
    state.export(export)
    line = next(
        json.loads(text)
        for text in export.read_text().splitlines()
        if json.loads(text).get("url") == url
    )
    page_entry = state.entry(url)
    assert page_entry is not None
    return tree.read(source), page_entry.restore, line


@pytest.mark.parametrize("killed", [False, True])
def test_the_restore_map_is_the_same_whether_a_404_came_before_or_after(
    tmp_path: Path, killed: bool
):
    """A link written relative before its target's 404 came, fixed up
    absolute, is not in the page's restore map any more: as when the 404
    came first (mirror-state.jsonl differed with the timing)."""
    after = restored_mirror(tmp_path / "after", absent_first=False, killed=killed)
    first = restored_mirror(tmp_path / "first", absent_first=True)
    assert after == first
    data, restore, line = after
    assert b'href="http://site.test/gone/"' in data
    assert b'href="http://site.test/gone/#x"' in data
    assert b'href="http://site.test/away"' in data
    assert b'href="http://site.test/p/1?n=1"' in data
    assert b'href="here"' in data
    # the link to /here says its URL as it is: not kept (restore_joins)
    assert restore == line["restore"] == {}
