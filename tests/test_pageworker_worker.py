"""The page worker (webspider.pageworker.worker): frames, answers, and the
real process over real pipes."""

import hashlib
import json
import marshal
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from webspider.mirror import fixup
from webspider.mirror.entry import Entry, pack_restore
from webspider.mirror.links import convert
from webspider.mirror.paths import url_path
from webspider.mirror.state import MirrorState
from webspider.page.links import LINK_RULES, extract_page
from webspider.page.spans import pack_spans
from webspider.pageworker import client
from webspider.pageworker.worker import (
    ENTRY_FIELDS,
    FrameError,
    FrameReader,
    Worker,
    frame_head,
    page_from_json,
    rules_from_json,
    rules_to_json,
    targets_from_json,
)
from webspider.records import MemoryRecordStore
from webspider.utils.url import canonical_url

URL = "http://site.test/dir/page.html"
PAGE = (
    b'<html><head><title>T &amp; t</title><meta name="robots" content="nofollow">'
    b'<base href="/base/"><link rel=stylesheet href="s.css?v=1"></head><body>'
    b'<a href="a.html#one">One</a> <a href="a.html#two">Two</a>'
    b'<a href="#local">here</a> <a href="/abs.html" rel=nofollow>abs</a>'
    b'<a href="http://site.test/base/x.html">x</a> <a href="mailto:a@b">m</a>'
    b'<img src="i.png" srcset="i2.png 2x" alt="pic"><div style="background:url(bg.png)">'
)


def frame(header, body=b""):
    return frame_head(header, body) + body


def test_frames_survive_any_chunking():
    frames = [({"op": "parse", "id": 1, "url": "é"}, b"\x00body"), ({"op": "x"}, b"")]
    data = b"".join(frame(h, b) for h, b in frames)
    reader = FrameReader()
    got = []
    for i in range(len(data)):  # byte by byte
        got += reader.feed(data[i : i + 1])
    assert got == frames


def test_bad_frames_are_refused():
    with pytest.raises(FrameError):  # far too large
        FrameReader().feed(b"\xff\xff\xff\xff\x00\x00\x00\x00")
    listed = marshal.dumps([1])
    with pytest.raises(FrameError, match="not a dict"):
        FrameReader().feed(struct.pack(">II", len(listed), 0) + listed)
    with pytest.raises(FrameError, match="not marshal data"):  # cut short
        FrameReader().feed(b"\x00\x00\x00\x03\x00\x00\x00\x00{x}")
    with pytest.raises(FrameError, match="not marshal data"):  # no such type
        FrameReader().feed(b"\x00\x00\x00\x01\x00\x00\x00\x00!")


def test_a_header_keeps_its_values_types():
    # tuples stay tuples; a subclass of a plain type (which marshal refuses)
    # crosses in its plain form, as it did as JSON
    class Name(str):
        pass

    header = {"op": "x", "path": ("s", "p.html"), "n": [1, None, True, 1.5]}
    ((got, body),) = FrameReader().feed(frame(header, b"b"))
    assert got == header and body == b"b"
    ((got, _),) = FrameReader().feed(frame({"name": Name("n"), "t": ("a",)}))
    assert got == {"name": "n", "t": ["a"]} and type(got["name"]) is str


def worker(tmp_path, keep=64):
    w = Worker(keep)
    w.handle({"op": "init", "rules": rules_to_json(LINK_RULES)}, b"")
    mirror = {"root": str(tmp_path), "forbidden": [], "keep_originals": False}
    w.handle({"op": "init", "mirror": mirror}, b"")
    return w


def ask(w, header, body=b""):
    """The header of the worker's answer."""
    return w.handle(header, body)[0]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_the_page_answered_is_the_page_read_here(tmp_path, encoding):
    body = PAGE.decode().encode(encoding)
    w = worker(tmp_path)
    answer = ask(
        w,
        {"op": "parse", "id": 1, "url": URL, "encoding": encoding, "keep": False},
        body,
    )
    page = page_from_json(URL, answer["page"])
    here = extract_page(body, URL, encoding)
    assert answer["in_place"] is (encoding == "utf-8")
    assert (page.base_url, page.title, page.metas) == (
        here.base_url,
        here.title,
        here.metas,
    )
    assert page.unsupported_links == here.unsupported_links == 1
    assert [link.url for link in page.links] == [link.url for link in here.links]
    assert [(link.kind, link.tag, link.text, link.nofollow) for link in page.links] == [
        (link.kind, link.tag, link.text, link.nofollow) for link in here.links
    ]
    # fragment texts: offsets into the same bytes, or read by the worker
    assert {
        f: (t if isinstance(t, str) else here.text(t))
        for f, t in page.links[1].more_fragments.items()
    } == {"two": "Two"}
    assert page.spans is None  # the scan stays with the worker


def test_the_compact_answer_keeps_every_field_and_the_links_keys(tmp_path):
    # a page with what Link's defaults leave out: nofollow, fragments, local
    # fragments, links whose canonical URL is not their URL
    body = PAGE + b'<a href="q.html?b=2&a=1">q</a><a href="HTTP://Site.test:80/y">y</a>'
    w = worker(tmp_path)
    answer = ask(
        w, {"op": "parse", "id": 1, "url": URL, "encoding": "utf-8", "keep": True}, body
    )
    page = page_from_json(URL, answer["page"])
    here = extract_page(body, URL, "utf-8")
    assert [
        (link.url, link.kind, link.tag, link.text, link.nofollow, link.fragment)
        for link in page.links
    ] == [
        (link.url, link.kind, link.tag, link.text, link.nofollow, link.fragment)
        for link in here.links
    ]
    # texts are offsets into the same bytes (in place)
    assert [(f, here.text(t)) for f, t in page.local_fragments] == [("local", "here")]
    assert (
        page.link_keys()
        == here.link_keys()
        == [canonical_url(link.url) for link in here.links]
    )
    assert "http://site.test/base/q.html?a=1&b=2" in page.link_keys()
    # the page item's content hash, worked out by the worker
    assert page.content_hash == hashlib.sha256(body).hexdigest()
    assert here.content_hash is None
    # only the keys that differ from their URL crossed
    assert [i for i, _ in answer["page"]["keys"]] == [7, 8]
    # the page kept for the mirror comes with its mirror path
    assert tuple(answer["path"]) == url_path(URL, True)
    # and the path its where_value (the index record's path) compares with
    assert answer["plain"] == "/".join(url_path(canonical_url(URL)))
    answer = ask(
        w,
        {"op": "parse", "id": 2, "url": URL, "encoding": "utf-8", "keep": False},
        body,
    )
    assert "path" not in answer


def parse_and_store(w, ident, body, targets, key=URL, *, fields=None, path=None):
    """The crawl's two messages for a page at URL: parse it, then store it
    with ``targets`` (the state's snapshot of its links, or None) at
    ``path`` (default: URL's); ``key``: the page's canonical URL (None: not
    sent); ``fields``: the index record's fields (worker.ENTRY_FIELDS) as
    the crawl sends them (None: not sent)."""
    w.handle(
        {"op": "parse", "id": ident, "url": URL, "encoding": "utf-8", "keep": True},
        body,
    )
    store = {
        "op": "store",
        "id": ident,
        "key": key,
        "path": list(path or url_path(URL)),
        "kind": "html",
        "targets": None if targets is None else targets.to_json(),
    }
    if key is None:
        del store["key"]
    if fields is not None:
        store["entry"] = tuple(fields[name] for name in ENTRY_FIELDS)
    return w.handle(store, b"")


def converted_here(body, state):
    """``body`` at URL converted in this process, as the worker must have."""
    page = extract_page(body, URL, "utf-8")
    return convert(
        body,
        state,
        url_path(URL),
        page_url=URL,
        base_url=page.base_url,
        encoding="utf-8",
        html=True,
        page=page,
    )


def test_a_stored_page_is_converted_as_here(tmp_path):
    state = MirrorState(MemoryRecordStore(), str(tmp_path / "m"))
    w = worker(tmp_path / "w")
    # the crawl's state so far: one page of the site is mirrored, one aliased
    for url, path in [
        ("http://site.test/base/x.html", ("site.test", "base", "x.html")),
        (URL, url_path(URL)),
    ]:
        state.put(Entry(url=url, path=path, hash="", size=0))
    state.alias("http://site.test/abs.html", "http://site.test/base/x.html")
    # the store carries where the page's links are (its keys, looked up in
    # the state by the crawl): the worker keeps no copy of the state
    keys = [URL, "http://site.test/abs.html", "http://site.test/base/s.css?v=1"]
    answer, packed = parse_and_store(w, 7, PAGE, state.targets(keys))
    here = converted_here(PAGE, state)
    written = (tmp_path / "w").joinpath(*answer["used"]).read_bytes()
    assert written == here.data != PAGE
    assert (answer["count"], set(answer["pending"])) == (here.count, here.pending)
    # the kept links of the page's site expected where url_path says are
    # sent as ``plain`` keys, without their path (and without spans)
    assert set(answer["plain"]) == set(here.plain) == set(here.kept)
    assert answer["kept"] == {}
    # the index record's form of ``restore`` comes packed (off the crawl's
    # core), as the crawl would pack it, and only so (the crawl keeps no
    # other form: Entry.index_json)
    assert here.restore
    assert answer["packed"] == pack_restore(URL, here.restore)
    assert "restore" not in answer
    # a store without the page's key (its canonical URL) gets it unpacked
    answer, _ = parse_and_store(w, 8, PAGE, state.targets(keys), key=None)
    assert answer["restore"] == here.restore
    assert "packed" not in answer
    assert "crc" not in answer
    assert packed == b""
    # stored once: a second store of the same page is refused
    again = ask(w, {"op": "store", "id": 7, "key": URL, "path": ["p"]})
    assert again == {"id": 7, "missing": True}


@pytest.mark.parametrize("converted", [True, False])
def test_the_store_answers_the_index_record_the_crawl_would_make(tmp_path, converted):
    # the worker makes the page's index record (Entry.index_json) from the
    # fields the crawl sends and what it wrote: the crawl stores it as it is
    state = MirrorState(MemoryRecordStore(), str(tmp_path / "m"))
    state.put(Entry(url="http://site.test/base/x.html", path=("x",), hash="", size=0))
    w = worker(tmp_path / "w")
    fields = {
        "hash": hashlib.sha256(PAGE).hexdigest(),
        "size": len(PAGE),
        "run": 3,
        "content_type": "text/html; charset=utf-8",
        "encoding": "utf-8",
        "etag": '"5f5e1000-1a2"',
        "last_modified": "Sun, 13 Sep 2020 12:26:40 GMT",
    }
    targets = (
        state.targets([URL, "http://site.test/base/x.html"]) if converted else None
    )
    answer, _ = parse_and_store(w, 9, PAGE, targets, fields=fields)
    here = Entry(url=URL, path=tuple(answer["used"]), kind="html", **fields)
    if converted:
        conversion = converted_here(PAGE, state)
        here.converted, here.restore = conversion.count > 0, conversion.restore
        assert here.converted and here.restore
    assert answer["record"] == here.index_json()
    assert Entry.from_json(answer["record"], URL).path == url_path(URL)
    # a file written elsewhere than url_path says: the record names its path
    answer, _ = parse_and_store(
        w, 10, PAGE, targets, fields=fields, path=("other", "p.html")
    )
    other = Entry.from_json(answer["record"], URL)
    assert other.path == ("other", "p.html")
    assert (other.hash, other.size, other.etag) == (here.hash, here.size, here.etag)
    # a store without the fields (an older crawl's) gets no record
    answer, _ = parse_and_store(w, 11, PAGE, state.targets([URL]))
    assert "record" not in answer


def test_targets_named_by_their_place_come_back_whole(tmp_path):
    # PageWorker._targets names the URLs among the page's link keys by their
    # place ("at"); the others (the page's own, an alias's target) by URL
    state = MirrorState(MemoryRecordStore(), str(tmp_path / "m"))
    page = extract_page(PAGE, URL, "utf-8")
    keys = page.link_keys()
    for url in (URL, keys[0], keys[2], "http://site.test/base/x.html"):
        state.put(Entry(url=url, path=url_path(url), hash="", size=0))
    state.alias(keys[3], "http://site.test/base/x.html")
    targets = state.targets([URL, *keys])
    data = targets.to_json()
    where = data["where"] = dict(data["where"])  # to_json shares its dicts
    place = {key: i for i, key in enumerate(keys)}
    data["at"] = [(place[url], where.pop(url)) for url in list(where) if url in place]
    assert data["at"] and set(data["where"]) == {URL}
    got = targets_from_json(json.loads(json.dumps(data)), page)
    assert got.where == targets.where and got.aliases == targets.aliases
    for url in (URL, *keys):
        assert got.get(url) == targets.get(url)


def test_a_page_with_links_left_absolute_gets_its_spans(tmp_path):
    state = MirrorState(MemoryRecordStore(), str(tmp_path / "m"))
    w = worker(tmp_path / "w")
    body = PAGE + b'<a href="http://elsewhere.test/e.html">e</a>'
    answer, packed = parse_and_store(w, 8, body, state.targets([URL]))
    here = converted_here(body, state)
    written = (tmp_path / "w").joinpath(*answer["used"]).read_bytes()
    assert answer["pending"] == ["http://elsewhere.test/e.html"]
    # where the links the fix-up may change are, in the bytes written
    assert answer["crc"] == zlib.crc32(written)
    assert packed == pack_spans(here.spans).tobytes() != b""


def test_a_large_page_whose_links_wait_by_target_gets_its_spans(tmp_path, monkeypatch):
    # PAGE's kept links all wait by target (no spans for a small page: see
    # test_a_stored_page_is_converted_as_here); a large one keeps them, for
    # the fix-up (webspider.mirror.fixup.keeps_spans)
    monkeypatch.setattr(fixup, "SPANS_KEPT_FROM", len(PAGE))
    state = MirrorState(MemoryRecordStore(), str(tmp_path / "m"))
    w = worker(tmp_path / "w")
    answer, packed = parse_and_store(w, 8, PAGE, state.targets([URL]))
    here = converted_here(PAGE, state)
    written = (tmp_path / "w").joinpath(*answer["used"]).read_bytes()
    assert answer["plain"] and not answer["pending"] and not answer["kept"]
    assert answer["crc"] == zlib.crc32(written)
    assert packed == pack_spans(here.spans).tobytes() != b""


def test_pages_kept_are_bounded(tmp_path):
    w = worker(tmp_path, keep=2)
    for ident in (1, 2, 3):
        w.handle({"op": "parse", "id": ident, "url": URL, "keep": True}, PAGE)
    assert list(w.held) == [2, 3]
    assert w.held_bytes == 2 * len(PAGE)
    w.handle({"op": "forget", "id": 2}, b"")
    assert list(w.held) == [3]
    assert w.held_bytes == len(PAGE)


def test_the_worker_refuses_paths_outside_its_folder(tmp_path):
    w = worker(tmp_path / "m")
    w.handle({"op": "parse", "id": 1, "url": URL, "keep": True}, PAGE)
    answer = ask(w, {"op": "store", "id": 1, "key": URL, "path": ["..", "evil.html"]})
    assert answer["unsafe"] is True
    assert not (tmp_path / "evil.html").exists()


# -- the page's path planned where its file is created -------------------------------
def parse_kept(w, ident, url=URL):
    return ask(
        w,
        {"op": "parse", "id": ident, "url": url, "encoding": "utf-8", "keep": True},
        PAGE,
    )


def test_the_page_read_comes_with_its_path_planned(tmp_path):
    """The worker plans the page's file (SafeTree.plan, its own tree of the
    mirror) as it reads it: the crawl's process then makes no look-up in the
    folder the worker creates files in."""
    w = worker(tmp_path / "m")
    # nothing there yet: the path as url_path gives it (true: not sent twice)
    assert parse_kept(w, 1)["planned"] is True
    # a folder where the file goes: the name write would use, suffixed
    (tmp_path / "m/site.test/dir/page.html").mkdir(parents=True)
    answer = parse_kept(w, 2)
    assert list(answer["planned"]) == ["site.test", "dir", "page%~f.html"]
    assert tuple(answer["path"]) == url_path(URL)  # and the path unplanned
    # a symlink on the way: not planned there (the crawl plans it, and refuses)
    (tmp_path / "outside").mkdir()
    (tmp_path / "m/other.test").symlink_to(tmp_path / "outside")
    answer = parse_kept(w, 3, "http://other.test/p.html")
    assert "planned" not in answer
    assert list(answer["path"]) == ["other.test", "p.html"]
    # a page not kept for the mirror is not planned
    answer = ask(w, {"op": "parse", "id": 4, "url": URL, "keep": False}, PAGE)
    assert "planned" not in answer
    assert not list((tmp_path / "outside").iterdir())


def test_the_worker_forgets_its_plans_when_the_tree_changed(tmp_path):
    """Its plans keep the folders they walked (SafeTree.plan): a write that
    used another path, a refused one, and the crawl's message (its own
    write found the tree changed) make it walk them again."""
    w = worker(tmp_path / "m")
    folder = tmp_path / "m/site.test/dir"
    assert parse_kept(w, 1)["planned"] is True  # the folder is not there yet
    store = {"op": "store", "id": 1, "key": URL, "path": list(url_path(URL))}
    assert tuple(ask(w, store)["used"]) == url_path(URL)
    parse_kept(w, 2)  # now its walk is kept
    assert w.tree is not None and w.tree._planned
    # the folder swapped for a symlink: the kept walk does not see it, the
    # write refuses it, and the plans are forgotten
    (tmp_path / "outside").mkdir()
    folder.rename(tmp_path / "old")
    folder.symlink_to(tmp_path / "outside")
    assert ask(w, {**store, "id": 2})["unsafe"] is True
    assert not w.tree._planned
    assert "planned" not in parse_kept(w, 3)  # walked again: refused
    assert not list((tmp_path / "outside").iterdir())
    # a write to another path than planned forgets them too
    folder.unlink()
    (tmp_path / "old").rename(folder)
    assert parse_kept(w, 4)["planned"] is True  # its folder's walk kept
    assert w.tree._planned
    (folder / "page.html").unlink()
    (folder / "page.html").mkdir()  # a folder where the file was planned
    used = ask(w, {**store, "id": 4})["used"]
    assert list(used) == ["site.test", "dir", "page%~f.html"]
    assert not w.tree._planned
    # and the crawl's message
    parse_kept(w, 6)
    assert w.tree._planned
    assert w.handle({"op": "forget_plans"}, b"") is None
    assert not w.tree._planned


def run_worker(*frames):
    """The real worker process: its answers to ``frames`` (one write)."""
    process = subprocess.run(
        [sys.executable, "-m", "webspider.pageworker.worker"],
        input=b"".join(frames),
        capture_output=True,
        timeout=60,
        check=True,
    )
    return [header for header, _ in FrameReader().feed(process.stdout)]


@pytest.mark.e2e
def test_the_process_answers_state_and_stores_before_pages(tmp_path):
    mirror = {"root": str(tmp_path), "forbidden": [], "keep_originals": False}
    answers = run_worker(
        frame({"op": "init", "rules": None}),
        frame({"op": "init", "mirror": mirror}),
        frame({"op": "parse", "id": 1, "url": URL, "keep": True}, PAGE),
        frame({"op": "parse", "id": 2, "url": URL, "keep": True}, PAGE),
        frame({"op": "store", "id": 2, "key": URL, "path": ["s", "p.html"]}),
        frame({"op": "nonsense", "id": 9}),
    )
    # All arrived in one read: what is not reading a page goes first (the
    # crawl asks to store a page only once it was read, so it never asks
    # for one still waiting: this one is missing). A page to read overtakes
    # only pages to store: the frame behind the store keeps them in order.
    assert [a["id"] for a in answers] == [2, 9, 1, 2]
    assert answers[0] == {"id": 2, "missing": True}
    assert answers[1]["error"].startswith("FrameError")
    assert "page" in answers[2]
    assert not Path(tmp_path, "s", "p.html").exists()


def test_pages_are_read_before_pages_stored_while_few_are_held(tmp_path):
    mirror = {"root": str(tmp_path), "forbidden": [], "keep_originals": False}
    answers = run_worker(
        frame({"op": "init", "rules": None, "keep": 4, "mirror": mirror}),
        frame({"op": "parse", "id": 1, "url": URL, "keep": True}, PAGE),
        frame({"op": "store", "id": 1, "key": URL, "path": ["s", "1.html"]}),
        frame({"op": "parse", "id": 2, "url": URL, "keep": True}, PAGE),
        frame({"op": "parse", "id": 3, "url": URL, "keep": True}, PAGE),
    )
    # each page read holds a download slot of the crawl's: pages 1 and 2 are
    # read before the store ahead of them, until half the bound (keep 4) is
    # held; then the store goes first, then page 3 (every store first had
    # page 1's missing: not read yet)
    assert [a["id"] for a in answers] == [1, 2, 1, 3]
    assert all("page" in answers[i] for i in (0, 1, 3))
    assert answers[2]["used"] == ("s", "1.html")


def spawn_and_read():
    """The page worker the crawl starts (client._spawn) from this
    ``sys.path``: its answer to one page."""
    process = client._spawn()
    out, err = process.communicate(
        frame({"op": "init", "rules": None})
        + frame({"op": "parse", "id": 1, "url": URL}, PAGE),
        timeout=60,
    )
    assert process.returncode == 0, err.decode()
    return [header for header, _ in FrameReader().feed(out)]


def _without_home():
    home = Path(client.__file__).resolve().parents[2]
    return [p for p in sys.path if Path(p or ".").resolve() != home]


@pytest.mark.e2e
@pytest.mark.parametrize("another_first", [False, True])
def test_the_worker_imports_the_crawl_s_own_webspider(
    tmp_path, monkeypatch, another_first
):
    # no path of the crawl's names webspider's folder: the crawl's process
    # found it by an import hook (an editable install's .pth file), and the
    # worker, started without the site module, imports it from that folder;
    # and with another webspider first on the path (an older one installed,
    # say), the worker must not import that one and speak its protocol
    path = _without_home()
    if another_first:
        other = tmp_path / "other"
        (other / "webspider").mkdir(parents=True)
        (other / "webspider" / "__init__.py").write_text(
            "raise SystemExit('the other webspider')\n"
        )
        path.insert(0, str(other))
    monkeypatch.setattr(sys, "path", path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.chdir(tmp_path)
    answers = spawn_and_read()
    assert [a["id"] for a in answers] == [1]
    assert answers[0]["page"]


@pytest.mark.e2e
def test_the_process_ends_with_its_input(tmp_path):
    assert run_worker() == []
    assert run_worker(frame({"op": "stop"}), frame({"op": "parse", "id": 1})) == []


@pytest.mark.e2e
def test_garbage_ends_the_process_with_one_line():
    process = subprocess.run(
        [sys.executable, "-m", "webspider.pageworker.worker"],
        input=b"\x00\x00\x00\x03\x00\x00\x00\x00{x}",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert process.returncode == 1
    assert process.stderr.decode().splitlines() == [
        "webspider page worker: FrameError: frame header is not marshal data: "
        "marshal data too short"
    ]


def test_link_rules_cross_whole():
    assert rules_from_json(json.loads(json.dumps(rules_to_json(LINK_RULES)))) == (
        LINK_RULES
    )


#: what the worker needs none of for a site of plain URLs: each is megabytes
#: of its memory (bench/README.md, "Peak RSS against plain Scrapy's, per
#: process"); w3lib.url brings urllib.request, http.client, email and ssl
HEAVY_MODULES = {"asyncio", "email", "hashlib", "ssl", "urllib.request", "w3lib.url"}


@pytest.mark.e2e
def test_the_process_reads_and_stores_pages_without_heavy_modules(tmp_path):
    mirror = {"root": str(tmp_path), "forbidden": [], "keep_originals": False}
    # the worker's own loop, then the modules it imported
    code = (
        "import sys\n"
        "from webspider.pageworker.worker import serve\n"
        "serve(sys.stdin.buffer, sys.stdout.buffer)\n"
        f"print(sorted({sorted(HEAVY_MODULES)!r} & sys.modules.keys()), file=sys.stderr)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(frame({"op": "init", "rules": None, "mirror": mirror}))
    process.stdin.write(frame({"op": "parse", "id": 1, "url": URL, "keep": True}, PAGE))
    process.stdin.flush()
    reader, answers = FrameReader(), []
    while not answers:  # the page read, then it is stored
        answers = reader.feed(process.stdout.read1(1 << 16))
    process.stdin.write(
        frame({"op": "store", "id": 1, "key": URL, "path": ["s", "p.html"]})
    )
    out, err = process.communicate(timeout=60)
    answers += reader.feed(out)
    assert process.returncode == 0
    assert answers[0][0]["page"]["links"]
    assert answers[1][0]["used"] == ("s", "p.html")
    assert Path(tmp_path, "s", "p.html").exists()
    assert err.decode().strip() == "[]"
