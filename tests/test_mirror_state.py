import json

from webspider.mirror.state import Entry, MirrorState


def entry(url, path, **kw):
    return Entry(url=url, path=tuple(path.split("/")), hash="h", size=1, **kw)


def test_put_reload_and_compact(tmp_path):
    file = tmp_path / "state.jsonl"
    state = MirrorState(file, "/m")
    state.put(entry("http://h/a", "h/a.html", etag='"1"'))
    state.put(entry("http://h/a", "h/a.html", etag='"2"'))  # the last line wins
    state.put(entry("http://h/B", "h/B", kept={"http://h/c": "h/c"}))
    state.alias("http://h/old", "http://h/a")
    again = MirrorState(file, "/m")  # what an interrupted crawl left
    assert again.entries["http://h/a"].etag == '"2"'
    assert again.get("http://h/old").url == "http://h/a"
    assert again.entries["http://h/B"].kept == {"http://h/c": "h/c"}
    assert again.owner(("h", "b")) == "http://h/B"  # case-insensitive ownership
    state.close()
    lines = file.read_text().splitlines()
    assert json.loads(lines[0]) == {"mirror_root": "/m", "version": 1}
    assert len(lines) == 5  # header, two URLs, one alias, the run


def test_a_cut_line_is_skipped(tmp_path):
    file = tmp_path / "state.jsonl"
    state = MirrorState(file, "/m")
    state.put(entry("http://h/a", "h/a"))
    state.close()
    with file.open("a") as fh:
        fh.write('{"url": "http://h/b", "pa')
    assert list(MirrorState(file, "/m").entries) == ["http://h/a"]


def test_another_mirror_starts_afresh(tmp_path):
    file = tmp_path / "state.jsonl"
    state = MirrorState(file, "/m")
    state.put(entry("http://h/a", "h/a"))
    state.close()
    other = MirrorState(file, "/elsewhere")
    assert other.entries == {}
    other.put(entry("http://h/x", "h/x"))  # the file now describes /elsewhere
    other.close()
    assert list(MirrorState(file, "/elsewhere").entries) == ["http://h/x"]


def test_every_change_of_place_is_told(tmp_path):
    state = MirrorState(tmp_path / "s.jsonl", "/m")
    told = []
    state.on_index = lambda url, path: told.append((url, path))
    state.on_alias = lambda url, target: told.append((url, target))
    a = Entry(url="http://h/a", path=("h", "a.html"), hash="x", size=1)
    old = state.reserve(a)
    state.release(a, old)  # not written after all: nowhere
    state.put(a)
    state.alias("http://h/old", "http://h/a")
    b = Entry(url="http://h/a", path=("h", "a2.html"), hash="y", size=1)
    state.release(b, state.reserve(b))  # back where it was
    state.close()
    assert told == [
        ("http://h/a", ("h", "a.html")),
        ("http://h/a", None),
        ("http://h/a", ("h", "a.html")),
        ("http://h/old", "http://h/a"),
        ("http://h/a", ("h", "a2.html")),
        ("http://h/a", ("h", "a.html")),
    ]
