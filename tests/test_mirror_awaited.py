from array import array

from tests.support.records import store as store  # noqa: PLC0414
from webspider.mirror.awaited import Awaited
from webspider.mirror.entry import Entry
from webspider.mirror.pending import spans_of, unpack_pending
from webspider.mirror.state import MirrorState
from webspider.records import flags_of
from webspider.reports.links import LinkLedger, Outcome
from webspider.utils.sitecodes import site_of
from webspider.utils.urlcodes import url_ids
from webspider.utils.waitinglinks import MIRROR, NS_WAITING, REPORTS


def entry(url, path, **kw):
    return Entry(url=url, path=tuple(path.split("/")), hash="h", size=1, **kw)


def rows(awaited):
    """The (page, target) of each waiting link, in the order of the rows."""
    keys = [key for key, _ in awaited.records.items()]
    for key in keys:  # two codes (the URLs' codes: 4 characters, or more)
        head, newline, tail = key.partition("\n")
        assert newline and 4 <= len(head) <= 12 and 4 <= len(tail) <= 12
    return [(page, target) for _, page, target in awaited._resolve(keys)]


def test_site_of():
    assert site_of("http://h:8080/a/b?c") == "http://h:8080"
    assert site_of("https://h") == "https://h"


def test_a_link_answered_in_its_batch_never_reaches_the_store(store):
    awaited = Awaited(store)
    awaited.wait("http://h/p", ["http://h/a", "http://h/b"])
    awaited.landed("http://h/a")
    awaited.wait("http://h/q", ["http://h/a"])  # written already: not kept
    awaited.flush()
    assert rows(awaited) == [("http://h/p", "http://h/b")]
    # the crawl's shared codes: the URLs once, without their site
    assert sorted(v for _, v in awaited.codes.records.items()) == ["1/b", "1/p"]


def test_links_are_forgotten_when_their_file_is_written(store):
    awaited = Awaited(store)
    awaited.wait("http://h/p", ["http://h/a", "http://h/b"])
    awaited.wait("http://h/q", ["http://h/a"])
    awaited.wait("https://other/r", ["https://other/a"])
    awaited.flush()
    assert sorted(rows(awaited)) == [
        ("http://h/p", "http://h/a"),
        ("http://h/p", "http://h/b"),
        ("http://h/q", "http://h/a"),
        ("https://other/r", "https://other/a"),
    ]
    awaited.landed("http://h/a")
    awaited.flush()
    assert sorted(rows(awaited)) == [
        ("http://h/p", "http://h/b"),
        ("https://other/r", "https://other/a"),
    ]
    left = [row for chunk in awaited.left(1) for row in chunk]
    assert sorted((page, target) for _, page, target in left) == [
        ("http://h/p", "http://h/b"),
        ("https://other/r", "https://other/a"),
    ]


def test_workers_of_a_shared_state_agree_on_site_codes(store):
    one, two = Awaited(store).codes.sites, Awaited(store).codes.sites
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
    assert rows(state.awaited) == [("http://h/p", "http://h/b")]
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


def test_clear_forgets_the_buffer_and_keeps_the_shared_codes(store):
    awaited = Awaited(store)
    awaited.wait("http://h/p", ["http://h/a"])
    awaited.flush()
    awaited.wait("http://h/p", ["http://h/b"])
    awaited.clear()
    awaited.flush()
    assert rows(awaited) == []
    # the codes are the crawl's (other features' rows may name them)
    assert awaited.codes.records.count() == 2
    assert awaited.codes.sites.code("http://other") == "2"


def test_urls_whose_ids_start_alike_get_codes_of_their_own(store):
    # two workers of a shared state, each with pages whose codes collide
    urls = [f"http://h/p/{i}" for i in range(20000)]
    by_code: dict[str, list[str]] = {}
    for url, url_id in zip(urls, url_ids(urls), strict=True):
        by_code.setdefault(url_id[:4].replace("+", "-").replace("/", "_"), []).append(
            url
        )
    first, second = max(by_code.values(), key=len)[:2]
    one, two = Awaited(store), Awaited(store)
    one.wait(first, ["http://h/t"])
    two.wait(second, ["http://h/t", first])
    one.flush()
    two.flush()
    assert sorted(rows(one)) == sorted(
        [(first, "http://h/t"), (second, "http://h/t"), (second, first)]
    )
    assert sorted(len(code) for code, _ in one.codes.records.items()) == [4, 4, 5]
    one.landed(first)
    one.flush()
    assert sorted(rows(one)) == sorted([(first, "http://h/t"), (second, "http://h/t")])


def test_the_mirror_and_the_reports_share_a_waiting_links_row(store):
    # webspider.utils.waitinglinks: one row a link for both features, each
    # clearing its own part when its answer comes
    awaited, ledger = Awaited(store), LinkLedger(store)
    p, t, u = "http://h/p", "http://h/t", "http://h/u"
    awaited.wait(p, [t, u])
    ledger.add_page(p, [(t, "to t", "a"), (u, "to u", "img")])
    awaited.flush()
    ledger.flush()
    rows_of = store.records(NS_WAITING).items()
    assert [flags_of(value) for _, value in rows_of] == [MIRROR | REPORTS] * 2
    # t's file is written where the link expects it; its outcome comes later
    awaited.landed(t)
    awaited.flush()
    ledger.broken(t, Outcome(url=t, status=404))
    [record] = ledger.records()
    assert record["referrers"] == [{"url": p, "text": "to t", "tag": "a"}]
    assert record["referrer_count"] == 1
    # u answered 2xx before its file was written: the mirror still waits
    ledger.good(u)
    ledger.flush()
    assert [(page, target) for _, page, target in chunks(awaited)] == [(p, u)]
    awaited.landed(u)
    awaited.flush()
    assert store.records(NS_WAITING).count() == 1  # the broken link's referrer
    assert list(awaited.left(10)) == []
    [record] = ledger.records()
    assert [r["url"] for r in record["referrers"]] == [p]


def chunks(awaited):
    return [row for chunk in awaited.left(10) for row in chunk]
