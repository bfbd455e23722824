from array import array

from tests.support.records import store as store  # noqa: PLC0414
from webspider.mirror.awaited import Awaited, site_of
from webspider.mirror.state import Entry, MirrorState, spans_of, unpack_pending


def entry(url, path, **kw):
    return Entry(url=url, path=tuple(path.split("/")), hash="h", size=1, **kw)


def rows(awaited):
    return [key for key, _ in awaited.records.items()]


def test_site_of():
    assert site_of("http://h:8080/a/b?c") == "http://h:8080"
    assert site_of("https://h") == "https://h"


def test_a_link_answered_in_its_batch_never_reaches_the_store(store):
    awaited = Awaited(store)
    awaited.wait("http://h/p", ["http://h/a", "http://h/b"])
    awaited.landed("http://h/a")
    awaited.wait("http://h/q", ["http://h/a"])  # written already: not kept
    awaited.flush()
    assert rows(awaited) == ["1/b\n/p"]


def test_links_are_forgotten_when_their_file_is_written(store):
    awaited = Awaited(store)
    awaited.wait("http://h/p", ["http://h/a", "http://h/b"])
    awaited.wait("http://h/q", ["http://h/a"])
    awaited.wait("https://other/r", ["https://other/a"])
    awaited.flush()
    assert rows(awaited) == ["1/a\n/p", "1/a\n/q", "1/b\n/p", "2/a\n/r"]
    awaited.landed("http://h/a")
    awaited.flush()
    assert rows(awaited) == ["1/b\n/p", "2/a\n/r"]
    left = [row for chunk in awaited.left(1) for row in chunk]
    assert [(page, target) for _, page, target in left] == [
        ("http://h/p", "http://h/b"),
        ("https://other/r", "https://other/a"),
    ]


def test_workers_of_a_shared_state_agree_on_site_codes(store):
    one, two = Awaited(store), Awaited(store)
    assert one.code("http://h") == "1"
    assert two.code("http://other") == "2"
    assert two.code("http://h") == "1"
    assert one.code("http://other") == "2"
    assert one.site("2") == "http://other"


def test_what_is_left_goes_to_the_pages_records_for_the_fix_up(store):
    state = MirrorState(store, "/m")
    packed = array("q", [1, 5, 7])
    # a page with a link left absolute (so spans) and two kept as written
    page = entry(
        "http://h/p",
        "h/p",
        pending=["http://x/e"],
        kept={"http://h/a": "h/a", "http://h/b": "h/b"},
    )
    state.put(page, (42, packed))
    state.add_twin("http://h/p", "http://h/p/")
    state.put(entry("http://h/q", "h/q", kept={"http://h/a": "h/a"}))
    state.put(entry("http://h/a", "h/a"))  # where they expect it
    state.put(entry("http://h/b", "h/b~1"))  # elsewhere: the fix-up repoints
    state.flush()
    assert rows(state.awaited) == ["1/b\n/p"]
    assert state.pending.get("http://h/q") is None  # nothing left to check
    assert state.gather() == 1
    assert rows(state.awaited) == []
    record = state.pending.get("http://h/p")
    assert unpack_pending("http://h/p", record) == (
        ["http://x/e"],
        {"http://h/b": "h/b"},
    )
    assert spans_of(record) == (42, packed)
    assert record["twins"] == ["http://h/p/"]
    assert state.gather() == 0


def test_a_kept_link_with_another_expected_file_stays_with_its_page(store):
    state = MirrorState(store, "/m")
    state.put(entry("http://h/p", "h/p", kept={"http://h/a": "h/a.html"}))
    state.flush()
    assert rows(state.awaited) == []
    assert unpack_pending("http://h/p", state.pending.get("http://h/p")) == (
        [],
        {"http://h/a": "h/a.html"},
    )


def test_clear_forgets_the_buffer_and_the_codes(store):
    awaited = Awaited(store)
    awaited.wait("http://h/p", ["http://h/a"])
    awaited.flush()
    awaited.wait("http://h/p", ["http://h/b"])
    awaited.clear()
    awaited.flush()
    assert rows(awaited) == []
    assert awaited.code("http://other") == "1"
