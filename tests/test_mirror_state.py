import json
from array import array
from urllib.parse import urljoin

from tests.support.records import store as store  # noqa: PLC0414
from webspider.mirror import state as state_module
from webspider.mirror.entry import Entry, export_line, pack_restore, unpack_restore
from webspider.mirror.paths import url_path
from webspider.mirror.pending import add_kept, pack_pending, spans_of, unpack_pending
from webspider.mirror.state import WHERE_KEPT, MirrorState
from webspider.mirror.targets import TargetIndex
from webspider.records import MemoryRecordStore
from webspider.utils.urlcodes import url_id


def entry(url, path, **kw):
    return Entry(url=url, path=tuple(path.split("/")), hash="h", size=1, **kw)


def test_entries_paths_and_aliases(store):
    state = MirrorState(store, "/m")
    state.put(entry("http://h/a", "h/a.html", etag='"1"'))
    state.put(entry("http://h/a", "h/a.html", etag='"2"'))
    state.put(entry("http://h/B", "h/B", kept={"http://h/c": "h/c"}))
    state.alias("http://h/old", "http://h/a")
    assert state.entry("http://h/a").etag == '"2"'
    assert state.entry("http://h/a").pending == []  # not in the index
    assert state.get("http://h/old").path == ("h", "a.html")
    assert state.owner(("h", "b")) == "http://h/B"  # case-insensitive ownership
    # the kept link waits for its file (by target), not with the page
    assert state.pending.get("http://h/B") is None
    state.flush()
    keys = [key for key, _ in state.awaited.records.items()]
    assert [row[1:] for row in state.awaited._resolve(keys)] == [
        ("http://h/B", "http://h/c")
    ]
    assert state.gather() == 1
    assert list(state.awaited.records.items()) == []
    # compact: the URL without its site, the expected file computed again
    assert state.pending.get("http://h/B") == {"k": "/c"}
    assert unpack_pending("http://h/B", state.pending.get("http://h/B")) == (
        [],
        {"http://h/c": "h/c"},
    )
    assert state.pending.get("http://h/a") is None  # nothing to fix up there
    assert "http://h/old" in state.aliases
    assert [e.url for e in state] == ["http://h/B", "http://h/a"]


def test_unseen_are_the_entries_a_finished_run_marks_gone(store):
    state = MirrorState(store, "/m")
    state.put(entry("http://h/old", "h/old.html", run=1))
    state.put(entry("http://h/gone", "h/gone.html", run=1, gone=True))
    state.put(entry("http://h/now", "h/now.html", run=2))
    state.put(entry("http://h/first", "h/first.html"))  # run 0: left out of its record
    state.put(entry("http://h/x", "h/x", run=2, converted=True, etag='"e"'))
    unseen = list(state.unseen(2))
    assert [e.url for e in unseen] == ["http://h/first", "http://h/old"]
    assert unseen[1] == state.entry("http://h/old")
    assert [e.url for e in state.unseen(0)] == [
        "http://h/now",
        "http://h/old",
        "http://h/x",
    ]
    # what iterating every entry and checking each gives, on any state
    for run in (0, 1, 2, 3):
        assert list(state.unseen(run)) == [
            e for e in state if not e.gone and e.run != run
        ]


def test_targets_is_a_snapshot_of_what_a_page_links_to(store):
    state = MirrorState(store, "/m")
    state.put(entry("http://h/a", "h/a.html"))
    state.put(entry("http://h/b", "h/b.html"))
    state.alias("http://h/old", "http://h/b")
    targets = state.targets(["http://h/a", "http://h/old", "http://h/none"])
    assert targets.get("http://h/a").path == ("h", "a.html")
    assert targets.get("http://h/old").path == ("h", "b.html")
    assert targets.get("http://h/none") is None
    assert targets.aliases == {"http://h/old": "http://h/b"}
    again = TargetIndex.from_json(json.loads(json.dumps(targets.to_json())))
    assert again == targets


def test_targets_tell_the_urls_fetched_and_not_mirrored(store):
    state = MirrorState(store, "/m")
    state.put(entry("http://h/a", "h/a.html"))
    state.alias("http://h/old", "http://h/gone")
    for url in ("http://h/gone", "http://h/a", "http://h/404"):
        state.mark_absent(url)
    links = ["http://h/a", "http://h/old", "http://h/404", "http://h/none"]
    targets = state.targets(links)
    # a mirrored URL, or one a redirect stands for, is never taken as absent
    assert targets.absent == {"http://h/404"}
    assert targets.get("http://h/404") is None
    again = TargetIndex.from_json(json.loads(json.dumps(targets.to_json())))
    assert again == targets
    assert targets.subset(["http://h/404"]).absent == {"http://h/404"}
    assert targets.subset(["http://h/a", "http://h/old"]).absent == set()
    assert "absent" not in state.targets(["http://h/a"]).to_json()


def test_absent_urls_kept_are_the_latest(store, monkeypatch):
    monkeypatch.setattr("webspider.mirror.state.ABSENT_KEPT", 3)
    state = MirrorState(store, "/m")
    for i in range(5):
        state.mark_absent(f"http://h/{i}")
    assert list(state.absent) == ["http://h/2", "http://h/3", "http://h/4"]
    links = [f"http://h/{i}" for i in range(5)]
    assert state.targets(links).absent == {"http://h/2", "http://h/3", "http://h/4"}


def test_moving_and_releasing_keep_the_names_owned(store):
    state = MirrorState(store, "/m")
    a = entry("http://h/a", "h/a.html")
    state.put(a)
    moved = entry("http://h/a", "h/a2.html")
    state.reserve(moved)  # known where it goes before it is written
    assert state.get("http://h/a").path == ("h", "a2.html")
    assert state.owner(("h", "a.html")) is None
    state.release(moved, a)  # not written after all: back where it was
    assert state.get("http://h/a").path == ("h", "a.html")
    assert state.owner(("h", "a.html")) == "http://h/a"
    assert state.owner(("h", "a2.html")) is None
    new = entry("http://h/n", "h/n.html")
    state.reserve(new)
    state.release(new, None)
    assert state.get("http://h/n") is None
    assert state.owner(("h", "n.html")) is None


def test_a_files_place_is_read_from_its_index_record(store):
    state = MirrorState(store, "/m")
    # the usual types (one number in the record) and others, a path url_path
    # gives and one it does not: each read back from the index record alone
    state.put(
        entry(
            "http://h/a", "h/a", content_type="text/html", kind="html", encoding="utf-8"
        )
    )
    state.put(
        entry(
            "http://h/b",
            "h/b.html",
            content_type="text/html",
            kind="html",
            encoding="utf-8",
        )
    )
    state.put(entry("http://h/c", "h/c", content_type="image/x-odd"))
    state.put(entry("http://h/d", "h/odd/d", content_type="image/x-odd"))
    assert state.targets(
        ["http://h/a", "http://h/b", "http://h/c", "http://h/d"]
    ).where == {
        "http://h/a": 1,
        "http://h/b": "h/b.html",
        "http://h/c": 1,
        "http://h/d": "h/odd/d",
    }
    # a page being written: known before its record, in memory only
    state.reserve(entry("http://h/n", "h/n.html"))
    assert state.targets(["http://h/n"]).where == {"http://h/n": "h/n.html"}
    assert state.get("http://h/n").path == ("h", "n.html")
    # a crawl resumed after a kill never wrote it: no file there
    again = MirrorState(store, "/m")
    assert again.get("http://h/n") is None
    assert again.get("http://h/d").path == ("h", "odd", "d")
    state.put(entry("http://h/n", "h/n.html"))
    assert state.reserved == {}
    assert MirrorState(store, "/m").get("http://h/n").path == ("h", "n.html")
    # no row of its own a page (format 5): the index, the name's owner
    assert {
        name for name in ("mirror.where",) if list(store.records(name).items())
    } == set()


def test_a_record_made_elsewhere_is_stored_as_it_is_unless_its_place_is_wrong(
    store, caplog
):
    # the page worker's record (Entry.index_json of the page as it wrote it)
    # is stored as it comes; one that says the file is elsewhere than it was
    # put is refused with a warning, and the record made here
    state = MirrorState(store, "/m")
    page = entry("http://h/a", "h/a.html", etag='"1"')
    made = page.index_json()
    made[1] = 99  # not what this process would make: stored as it is
    state.put(page, record=made)
    assert state.index.get("http://h/a") == made
    assert state.entry("http://h/a").size == 99
    assert not caplog.records
    moved = entry("http://h/b", "h/x/b.html")
    state.put(moved, record=entry("http://h/b", "h/b.html").index_json())
    assert state.index.get("http://h/b") == moved.index_json()
    assert state.get("http://h/b").path == ("h", "x", "b.html")
    assert [r.getMessage() for r in caplog.records] == [
        "Mirror: the index record the page worker made for http://h/b does not "
        "say where its file is (h/x/b.html); made here"
    ]


def test_a_remembered_place_follows_the_index(store):
    # where_many remembers what it read (a link every page repeats is read
    # once): what the index says next must still be what was written last
    state = MirrorState(store, "/m")
    urls = ["http://h/a", "http://h/b"]
    assert state.targets(urls).where == {}  # remembered: no file
    state.put(entry("http://h/a", "h/a"))
    assert state.targets(urls).where == {"http://h/a": 1}
    state.put(entry("http://h/a", "h/moved/a"))  # a file of another name now
    state.update(entry("http://h/b", "h/b.html"))
    assert state.targets(urls).where == {
        "http://h/a": "h/moved/a",
        "http://h/b": "h/b.html",
    }
    state.clear()
    assert state.targets(urls).where == {}
    # past two generations, the first URLs are read again, and still right
    state.put(entry("http://h/a", "h/a"))
    many = [f"http://h/p{i}" for i in range(2 * WHERE_KEPT + 1)]
    assert state.targets(["http://h/a", *many]).where == {"http://h/a": 1}
    assert state.targets(["http://h/a"]).where == {"http://h/a": 1}


class Reads:
    """A Records that counts its reads (and reads, writes as ``records``)."""

    def __init__(self, records):
        self.records = records
        self.count = 0

    def get(self, key):
        self.count += 1
        return self.records.get(key)

    def get_many(self, keys):
        self.count += 1
        return self.records.get_many(keys)

    def __getattr__(self, name):
        return getattr(self.records, name)


def test_a_url_remembered_without_a_place_has_no_entry(store):
    # its links were looked up (targets) before the page came: its entry is
    # not read, and once written it is where the record says, unread too
    state = MirrorState(store, "/m")
    reads = state.index.records = Reads(state.index.records)
    assert state.targets(["http://h/a", "http://h/b"]).where == {}
    assert reads.count == 1
    assert state.entry("http://h/a") is None
    assert reads.count == 1
    state.put(entry("http://h/a", "h/moved/a"))
    assert state.targets(["http://h/a"]).where == {"http://h/a": "h/moved/a"}
    assert reads.count == 1
    assert state.entry("http://h/a").path == ("h", "moved", "a")  # read
    state.update(entry("http://h/b", "h/b"))
    assert state.entry("http://h/b").path == ("h", "b")
    assert state.targets(["http://h/b"]).where == {"http://h/b": 1}
    # not remembered (never asked): read, and right
    assert state.entry("http://h/c") is None
    state.clear()
    assert state.entry("http://h/a") is None


def test_redirects_are_known_in_memory_while_they_are_few(store, tmp_path, monkeypatch):
    monkeypatch.setattr(state_module, "ALIASES_KEPT", 2)
    file = tmp_path / "mirror-state.jsonl"
    state = MirrorState(store, "/m")
    state.begin(file, continued=False)
    state.put(entry("http://h/a", "h/a"))
    reads = state.alias_records = Reads(state.alias_records)
    assert state.targets(["http://h/old", "http://h/a"]).aliases == {}
    state.alias("http://h/old", "http://h/a")
    found = state.targets(["http://h/old", "http://h/x"])
    assert found.aliases == {"http://h/old": "http://h/a"}
    assert found.where == {"http://h/a": 1}
    assert state.get("http://h/old").path == ("h", "a")
    assert reads.count == 0
    # a resumed crawl finds them in the records
    file.write_text('{"mirror_root": "/m", "version": 1}\n')
    again = MirrorState(store, "/m")
    again.begin(file, continued=True)
    assert again.targets(["http://h/old"]).aliases == {"http://h/old": "http://h/a"}
    # past ALIASES_KEPT: read from the records, still right
    state.alias("http://h/o2", "http://h/a")
    state.alias("http://h/o3", "http://h/a")
    assert state._all_aliases is None
    assert state.targets(["http://h/old", "http://h/o3", "http://h/x"]).aliases == {
        "http://h/old": "http://h/a",
        "http://h/o3": "http://h/a",
    }
    assert reads.count > 0
    # a shared state's other workers write them too: always read
    shared = MirrorState(store, "/m", shared=True)
    shared.begin(file, continued=True)
    assert shared._all_aliases is None


def test_a_shared_states_places_are_read_every_time(store):
    # another worker writes the index of a shared state: nothing remembered
    state = MirrorState(store, "/m", shared=True)
    other = MirrorState(store, "/m", shared=True)
    assert state.targets(["http://h/a"]).where == {}
    other.put(entry("http://h/a", "h/a"))
    assert state.targets(["http://h/a"]).where == {"http://h/a": 1}


def test_a_names_owner_is_kept_as_its_code(store):
    state = MirrorState(store, "/m")
    state.put(entry("https://www.example.org/docs/a", "www.example.org/docs/a.html"))
    # the name by its id, its owner by its code: neither as the URL
    stored = store.records("mirror.paths").get(url_id("www.example.org/docs/a.html"))
    # the URL's code (the crawl's shared codes), not the URL
    url = "https://www.example.org/docs/a"
    assert stored == state.awaited.codes.find([url])[url]
    assert len(stored) == 4
    assert state.owner(("www.example.org", "docs", "a.html")) == url
    state.release(entry(url, "www.example.org/docs/a.html"), None)
    assert state.owner(("www.example.org", "docs", "a.html")) is None


def test_a_new_url_takes_a_free_name_in_one_write(store):
    """``take``: the name's owner, or (none) the URL owns it from then on;
    ``reserve`` with ``owned`` writes no second claim, ``release`` frees it."""
    state = MirrorState(store, "/m")
    name = ("h", "a.html")
    url, other = "http://h/a", "http://h/A"
    assert state.take(url, name) is None
    assert state.owner(name) == url
    assert state.take(other, ("h", "A.html")) == url  # the same name, cased
    assert state.owner(name) == url
    new = entry(url, "h/a.html")
    value = state.reserve(new, None, owned=True)
    assert state.owner(name) == url
    assert state.targets([url]).where == {url: value}
    state.put(new, placed=value)
    assert state.owner(name) == url and state.entry(url).path == name
    # taken and released (the write refused): free again
    assert state.take("http://h/b", ("h", "b.html")) is None
    state.reserve(entry("http://h/b", "h/b.html"), None, owned=True)
    state.release(entry("http://h/b", "h/b.html"), None)
    assert state.owner(("h", "b.html")) is None
    assert state.targets(["http://h/b"]).where == {}
    # reserved elsewhere meanwhile (its old place, cased like the new one):
    # the new name is still its own
    assert state.take("http://h/c", ("h", "c.html")) is None
    state.reserved["http://h/c"] = "h/C.html"
    state.reserve(entry("http://h/c", "h/c.html"), None, owned=True)
    assert state.owner(("h", "c.html")) == "http://h/c"


def test_spans_are_kept_with_the_pending_record(store):
    state = MirrorState(store, "/m")
    packed = array("q", [1, 5, 7, 9, 12, 3])
    state.put(entry("http://h/p", "h/p.html", pending=["http://h/x"]), (42, packed))
    assert spans_of(state.pending.get("http://h/p")) == (42, packed)
    state.add_twin("http://h/p", "http://h/p/")
    assert state.pending.get("http://h/p")["twins"] == ["http://h/p/"]


def test_export_and_import(store, tmp_path):
    file = tmp_path / "mirror-state.jsonl"
    state = MirrorState(store, "/m")
    assert state.begin(file, continued=False) == (1, False)
    state.put(entry("http://h/a", "h/a.html", restore={"b.html": "http://h/b"}))
    state.put(entry("http://h/b", "h/b", kept={"http://h/c": "h/c"}))
    state.alias("http://h/old", "http://h/a")
    state.end(finished=True)
    state.export(file)
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    assert lines[0] == {"mirror_root": "/m", "version": 1}
    assert [line.get("url") for line in lines[1:3]] == ["http://h/a", "http://h/b"]
    assert lines[2]["kept"] == {"http://h/c": "h/c"}
    assert lines[3] == {"alias": "http://h/old", "url": "http://h/a"}
    assert lines[4] == {"run": 1, "finished": True}
    # the next crawl starts a fresh crawl state: it reads the export
    fresh = MirrorState(MemoryRecordStore(), "/m")
    assert fresh.begin(file, continued=False) == (2, False)
    assert fresh.entry("http://h/a").restore == {"b.html": "http://h/b"}
    fresh.gather()  # the imported kept link waits for its file until then
    assert unpack_pending("http://h/b", fresh.pending.get("http://h/b")) == (
        [],
        {"http://h/c": "h/c"},
    )
    assert fresh.get("http://h/old").path == ("h", "a.html")


def test_the_index_is_keyed_by_site_code_and_streams_in_url_order(store, tmp_path):
    # sites first seen in an order that is not their URLs' (and one whose
    # name the other's starts with: "." sorts before "/")
    urls = [
        "http://b.test/x",
        "http://a.test/z",
        "http://a.test.b/y",
        "http://a.test/a",
        "https://a.test/",
        "http://a.test:81/q",
    ]
    state = MirrorState(store, "/m")
    for url in urls:
        state.put(entry(url, "f/" + url_id(url)))
    keys = [key for key, _ in store.records("mirror.index").items()]
    # written without their scheme://host: a site code of one character
    assert all(not key.startswith("http") for key in keys), keys
    assert sum(map(len, keys)) < 20
    assert [e.url for e in state] == sorted(urls)
    state.end(finished=True)
    file = tmp_path / "mirror-state.jsonl"
    state.export(file)
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    assert [line["url"] for line in lines[1:-1]] == sorted(urls)
    fresh = MirrorState(MemoryRecordStore(), "/m")
    fresh.begin(file, continued=False)
    assert fresh.entry("http://a.test.b/y").path == ("f", url_id("http://a.test.b/y"))


def test_an_interrupted_run_goes_on(store, tmp_path):
    file = tmp_path / "mirror-state.jsonl"
    state = MirrorState(store, "/m")
    state.begin(file, continued=False)
    state.put(entry("http://h/a", "h/a"))
    # the same crawl state, opened again by the resumed crawl: no import
    file.write_text('{"mirror_root": "/m", "version": 1}\n')
    again = MirrorState(store, "/m")
    assert again.begin(file, continued=True) == (1, True)
    assert again.entry("http://h/a") is not None
    # killed after the mirror recorded the end, before the crawl state did
    again.end(finished=True)
    assert MirrorState(store, "/m").begin(file, continued=True) == (1, True)


def test_an_older_versions_append_log_is_imported(tmp_path):
    # written by an older version as it went: the last line for a URL wins,
    # and a line cut by a crash is skipped
    file = tmp_path / "mirror-state.jsonl"
    lines = [
        {"mirror_root": "/m", "version": 1},
        {"run": 3, "finished": False},
        {"url": "http://h/a", "path": "h/a", "hash": "1", "size": 1, "etag": "x"},
        {"url": "http://h/a", "path": "h/a", "hash": "2", "size": 1, "etag": "y"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    file.write_text(text + '{"url": "http://h/b", "pa')
    state = MirrorState(MemoryRecordStore(), "/m")
    assert state.begin(file, continued=False) == (4, False)
    assert state.entry("http://h/a").etag == "y"
    assert state.entry("http://h/b") is None


def test_another_mirror_starts_afresh(tmp_path):
    file = tmp_path / "mirror-state.jsonl"
    state = MirrorState(MemoryRecordStore(), "/m")
    state.begin(file, continued=False)
    state.put(entry("http://h/a", "h/a"))
    state.end(finished=True)
    state.export(file)
    other = MirrorState(MemoryRecordStore(), "/elsewhere")
    assert other.begin(file, continued=False) == (1, False)
    assert list(other) == []


def test_pending_links_round_trip_compactly():
    page = "http://h:8080/docs/p"
    pending = ["http://h:8080/x?y=1", "http://other/z", "https://h:8080/s"]
    kept = {
        "http://h:8080/docs/a": "h_8080/docs/a",
        "http://h:8080/docs/": "h_8080/docs/index.html",
        "http://h:8080/b": "h_8080/b.html",  # not url_path's answer: kept as is
    }
    record = pack_pending(page, pending, kept)
    assert record["p"].split("\n") == ["/x?y=1", "http://other/z", "https://h:8080/s"]
    assert record["k"] == "/docs/a\n/docs/"
    assert record["kx"] == {"http://h:8080/b": "h_8080/b.html"}
    assert unpack_pending(page, record) == (pending, kept)
    # records of the earlier form are read as they were
    old = {"pending": pending, "kept": kept}
    assert unpack_pending(page, old) == (pending, kept)


def test_kept_links_added_in_chunks_are_what_packing_them_at_once_gives():
    """The fix-up's gather adds a page's waiting links a chunk at a time;
    the record it ends with must be the one unpacking and packing gave."""
    page = "http://h:8080/docs/p"
    record = pack_pending(
        page,
        ["http://h:8080/x?y=1"],
        {
            "http://h:8080/docs/a": "h_8080/docs/a",
            "http://h:8080/b": "h_8080/b.html",  # not url_path's: kept as is
        },
    )
    record["count"] = 3  # fields that are not links stay
    targets = [f"http://h:8080/t/{i}" for i in range(2500)] + [
        "http://h:8080/docs/a",  # kept already
        "http://h:8080/b",  # kept already, with its own file
        "http://other/z",
        "http://h:8080/n\nl",  # a newline: only kx can hold it
    ]
    expected = dict(record)
    pending, kept = unpack_pending(page, record)
    for target in targets:
        kept.setdefault(target, "/".join(url_path(target)))
    expected.update(pack_pending(page, pending, kept))
    for start in range(0, len(targets), 1000):
        record = add_kept(page, record, targets[start : start + 1000])
        # a chunk seen again (a kill between the write and its commit)
        record = add_kept(page, record, targets[start : start + 10])
    assert record == expected
    assert add_kept(page, None, ["http://h:8080/docs/c"]) == {"k": "/docs/c"}
    # records of the earlier form are merged as before
    old = {"pending": pending[:1], "kept": {"http://h:8080/docs/a": "x"}}
    assert unpack_pending(page, add_kept(page, old, ["http://h:8080/docs/a"])) == (
        pending[:1],
        {"http://h:8080/docs/a": "x"},
    )


def test_restore_keeps_only_what_the_link_does_not_say():
    page = "http://h/docs/p"
    restore = {
        "a.html": "http://h/docs/a.html",  # the value itself
        "b.html#top": "http://h/docs/b#top",  # wget -E
        "../index.html": "http://h/",  # a folder
        "c.html": "http://h/docs/C?x=1",  # anything else: as it is
    }
    packed = pack_restore(page, restore)
    assert packed["restore"] == {"c.html": "http://h/docs/C?x=1"}
    # a value that says its URL is not kept at all
    assert packed["same"] == "hb.html#top\ni../index.html"
    said = {k: v for k, v in restore.items() if k != "a.html"}
    assert unpack_restore(page, packed["same"], packed["restore"]) == said
    # records of the earlier form (with "=" lines) are read as they were
    assert (
        unpack_restore(
            page, "=a.html\n" + packed["same"], {"c.html": restore["c.html"]}
        )
        == restore
    )
    e = Entry(url=page, path=("h", "docs", "p.html"), hash="x", size=1)
    e.restore = restore
    again = Entry.from_json(json.loads(json.dumps(e.index_json())), page)
    assert again.restore == said and again.restore_joins
    e.restore, e.restore_joins = said, True
    assert again == e
    assert "x" not in e.index_json()  # defaults are left out


def test_an_export_line_is_the_entrys_own_line():
    # every shape of index record (and the older forms): the same line,
    # key for key and in the same order, as the Entry read back writes
    url = "http://h/p/0/12.html"
    digest = "7040627e7ca8f58d9ac3428875407b695bafeea48a9d97bd5bb80772ca31a54f"
    records: list[object] = []
    for types in [
        ("text/html", "html", "utf-8"),
        ("text/html", "html", None),
        ("image/png", "", None),
        ("text/plain", "", "ascii"),
    ]:
        for etag in (None, '"x"', '"6b0f41ad-ef8"'):
            for modified in (None, "Tue, 01 Dec 2026 21:52:45 GMT", "Tuesday"):
                for path in (("h", "p", "0", "12.html"), ("h", "p", "x%~f")):
                    for restore in (
                        {},
                        {"13.html": "http://h/p/0/13.html"},
                        {"a": "b"},
                    ):
                        e = Entry(url=url, path=path, hash=digest, size=3832)
                        e.content_type, e.kind, e.encoding = types
                        e.etag, e.last_modified, e.restore = etag, modified, restore
                        e.converted, e.gone, e.run = bool(restore), etag is None, 3
                        records.append(json.loads(json.dumps(e.index_json())))
    records.append(Entry(url=url, path=("h", "x"), hash="odd", size=1).index_json())
    records.append({"hash": "h", "size": 1, "path": "h/x.html", "same": "=a.html"})
    records.append({"s": 3, "b": "cEBifnyo9Y2aw0KIdUB7aVuv7qSKnZe9W7gHcsoxpU8"})
    for record in records:
        line = export_line(record, url)
        assert json.dumps(line) == json.dumps(Entry.from_json(record, url).to_json())


def test_index_record_is_compact_and_reads_back():
    url = "http://h/p/0/12.html"
    e = Entry(
        url=url,
        path=("h", "p", "0", "12.html"),
        hash="7040627e7ca8f58d9ac3428875407b695bafeea48a9d97bd5bb80772ca31a54f",
        size=3832,
        content_type="text/html",
        kind="html",
        encoding="utf-8",
        etag='"6b0f41ad-ef8"',
        last_modified="Tue, 01 Dec 2026 21:52:45 GMT",
        converted=True,
        run=1,
        restore={"13.html": "http://h/p/0/13.html", "../1/index.html": "http://h/p/1/"},
    )
    record = e.index_json()
    # fields by position, no URL nor path it can compute again, the hash in
    # base64, the date as a number, no link that says its URL
    assert record[:4] == ["cEBifnyo9Y2aw0KIdUB7aVuv7qSKnZe9W7gHcsoxpU8", 3832, 1, 9]
    # the usual content type, kind and encoding as one number
    assert record[4:] == [1796161965, 0, None, None, "i../1/index.html"]
    assert len(json.dumps(record, separators=(",", ":"))) < 115  # 140, 180, 330 before
    again = Entry.from_json(json.loads(json.dumps(record)), url)
    assert again.hash == e.hash and again.path == e.path
    assert again.last_modified == e.last_modified and again.converted is True
    assert again.restore == {"../1/index.html": "http://h/p/1/"}
    assert (again.etag, again.encoding, again.kind) == (e.etag, "utf-8", "html")
    # other types are kept as they are, the usual ones wherever the record ends
    for types in [
        ("text/html", "html", None),
        ("image/png", "", None),
        ("text/plain", "", "ascii"),
    ]:
        e.content_type, e.kind, e.encoding = types
        for etag in (None, '"x"'):
            e.etag = etag
            back = Entry.from_json(json.loads(json.dumps(e.index_json())), url)
            assert (back.content_type, back.kind, back.encoding) == types
            assert back.etag == etag and back.restore == again.restore
    # defaults at the end are left out
    bare = Entry(url=url, path=e.path, hash=e.hash, size=5)
    assert len(bare.index_json()) == 2
    assert Entry.from_json(bare.index_json(), url) == Entry(
        url=url, path=e.path, hash=e.hash, size=5, restore_joins=True
    )
    # the object form an earlier version wrote is read as it was
    earlier = {
        "s": 3832,
        "t": "text/html",
        "k": "html",
        "e": "utf-8",
        "g": '"6b0f41ad-ef8"',
        "m": 1796161965,
        "c": 1,
        "r": 1,
        "b": "cEBifnyo9Y2aw0KIdUB7aVuv7qSKnZe9W7gHcsoxpU8",
        "j": "i../1/index.html",
    }
    assert Entry.from_json(earlier, url) == again
    # what is not in the usual form is kept as it is
    odd = Entry(
        url=url,
        path=("h", "x.html"),
        hash="h",
        size=1,
        last_modified="Tuesday, 01-Dec-26 21:52:45 GMT",
    )
    back = Entry.from_json(odd.index_json(), url)
    assert (back.path, back.hash, back.last_modified) == (
        odd.path,
        "h",
        odd.last_modified,
    )
    # the long form (an older state, the export) is read as before
    long = {"hash": "h", "size": 1, "path": "h/x.html", "same": "=a.html"}
    old = Entry.from_json(long, url)
    assert old.restore == {"a.html": "http://h/p/0/a.html"}
    assert not old.restore_joins


def test_restore_packs_as_urljoin_says():
    """pack_restore/unpack_restore join with UrlJoiner: the records are
    those urljoin's joins give, for plain and odd values alike (a value
    whose join is its URL is left out: read as it is, it says its URL)."""

    def reference(page_url, restore):
        same, other = [], {}
        for value, stands_for in restore.items():
            joined = urljoin(page_url, value) if "\n" not in value else ""
            if not joined:
                other[value] = stands_for
                continue
            for rule, suffix in (("=", ""), ("h", ".html"), ("i", "index.html")):
                head, hash_, fragment = joined.partition("#")
                if not suffix:
                    derived = joined
                elif not head.endswith(suffix) or (
                    rule == "h" and head.endswith("/index.html")
                ):
                    continue
                else:
                    derived = head[: -len(suffix)] + hash_ + fragment
                if derived == stands_for:
                    if rule != "=":
                        same.append(rule + value)
                    break
            else:
                other[value] = stands_for
        packed = {}
        if same:
            packed["same"] = "\n".join(same)
        if other:
            packed["restore"] = other
        return packed

    page = "http://h.test/docs/sub/p.html?q=1"
    values = [
        "a.html",
        "../a.html",
        "../../x/index.html",
        "/root.html",
        "./dot.html",
        "a/../b.html",
        "b.html#frag",
        "c.html?x=1#y",
        "?only",
        "#only",
        "",
        "//other.test/x.html",
        "http://h.test/abs.html",
        "sp ace.html",
        "semi;colon.html",
        "x:y.html",
        "back\\slash.html",
        "ünï.html",
        "dir/index.html",
        "line\nbreak",
    ]
    restore = {}
    for value in values:
        joined = urljoin(page, value)
        restore[value] = joined
        restore[value + "-h.html"] = urljoin(page, value + "-h")
        restore["o/" + value] = "http://elsewhere.test/" + value
    assert pack_restore(page, restore) == reference(page, restore)
    packed = pack_restore(page, restore)
    said = {  # a value with a line break is kept as it is
        value: url
        for value, url in restore.items()
        if "\n" in value or urljoin(page, value) != url
    }
    assert unpack_restore(page, packed["same"], packed.get("restore", {})) == said


def test_an_nginx_etag_is_a_flag_of_the_index_record():
    # nginx's ETag of a static file is its mtime (the Last-Modified date)
    # and size in hex: the record says so in its flags, and gives it back
    stamp = 1733140000
    modified = "Mon, 02 Dec 2024 11:46:40 GMT"
    for etag, kept in [
        (f'"{stamp:x}-{2345:x}"', False),
        (f'W/"{stamp:x}-{2345:x}"', False),
        (f'"{stamp:x}-{2346:x}"', True),  # another size: kept as it is
        ('"abc"', True),
    ]:
        page = Entry(
            url="http://h/a",
            path=("h", "a.html"),
            hash="a" * 64,
            size=2345,
            last_modified=modified,
            etag=etag,
            converted=True,
        )
        record = page.index_json()
        assert (etag in record) is kept, record
        back = Entry.from_json(record, "http://h/a")
        assert (back.etag, back.last_modified, back.converted) == (
            etag,
            modified,
            True,
        )
