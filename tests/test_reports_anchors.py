import pytest

from tests.support.records import reopen
from tests.support.records import store as store  # noqa: PLC0414
from webspider.reports.anchors import (
    NAMESPACES,
    AnchorLedger,
    is_anchor_fragment,
    page_anchors,
)


@pytest.mark.parametrize(
    ("text", "anchors"),
    [
        ('<h2 id="intro">x</h2>', {"intro"}),
        ("<a name=old>x</a>", {"old"}),
        ("<div ID='Up'>", {"Up"}),
        ('<p class="id=nope">id="text" outside a tag</p>', set()),
        ('<section data-id="x" id="y">', {"y"}),
        ("", set()),
    ],
)
def test_page_anchors(text, anchors):
    assert page_anchors(text) == anchors


@pytest.mark.parametrize(
    ("fragment", "checked"),
    [
        ("section", True),
        ("", False),
        ("top", False),
        ("TOP", False),
        (":~:text=hello", False),
        ("!/route", False),
        ("/route", False),
    ],
)
def test_is_anchor_fragment(fragment, checked):
    assert is_anchor_fragment(fragment) is checked


def test_fragments_linked_before_and_after_the_page_is_fetched(store):
    ledger = AnchorLedger(max_referrers=10, store=store)
    ledger.add_link("b", "http://s/b", "there", ("p1", "ok", "a"))
    ledger.add_link("b", "http://s/b", "nope", ("p1", "bad", "a"))
    ledger.page_fetched("b", frozenset({"there", "caf\u00e9"}))
    ledger.add_link("b", "http://s/b", "nope", ("p2", "bad again", "a"))
    ledger.add_link("b", "http://s/b", "caf%C3%A9", ("p2", "encoded", "a"))
    [record] = ledger.records()
    assert record["url"] == "http://s/b#nope"
    assert record["error"] == "missing_anchor"
    assert [r["url"] for r in record["referrers"]] == ["p1", "p2"]
    assert ledger.missing_count == 1


def test_fragments_of_pages_never_fetched_are_not_reported(store):
    ledger = AnchorLedger(max_referrers=10, store=store)
    ledger.add_link("pdf", "http://s/doc.pdf", "page=2", ("p", "", "a"))
    assert list(ledger.records()) == []


def test_a_page_read_twice_adds_nothing_and_referrers_are_capped_but_counted(store):
    ledger = AnchorLedger(max_referrers=2, store=store)
    for page in ("p3", "p1", "p2", "p1"):  # p1 read twice (fetched again)
        ledger.add_link("b", "http://s/b", "x", (page, f"to x from {page}", "a"))
    ledger.page_fetched("b", frozenset({"y"}))
    ledger.page_fetched("b", frozenset({"y"}))
    ledger.add_link("b", "http://s/b", "x", ("p1", "again", "a"))
    [record] = ledger.records()
    assert record["referrer_count"] == 3
    assert record["referrers"] == [
        {"url": "p1", "text": "to x from p1", "tag": "a"},
        {"url": "p2", "text": "to x from p2", "tag": "a"},
    ]
    assert ledger.missing_count == 1


def test_a_resumed_ledger_continues_and_a_new_crawl_clears_it(request, store):
    ledger = AnchorLedger(max_referrers=10, store=store)
    ledger.add_link("b", "http://s/b", "early", ("p1", "early", "a"))
    ledger.page_fetched("c", frozenset({"here"}))
    # the crawl is killed; a resumed one finds what was committed
    store = reopen(request, store)
    resumed = AnchorLedger(max_referrers=10, store=store)
    resumed.page_fetched("b", frozenset())  # what it was linked for earlier
    resumed.add_link("c", "http://s/c", "gone", ("p2", "late", "a"))
    resumed.add_link("c", "http://s/c", "here", ("p2", "fine", "a"))
    assert [r["url"] for r in resumed.records()] == [
        "http://s/b#early",
        "http://s/c#gone",
    ]
    assert resumed.missing_count == 2
    resumed.clear()
    assert list(resumed.records()) == []
    assert resumed.missing_count == 0
    assert all(store.records(name).count() == 0 for name in NAMESPACES)


def test_anchors_of_a_page_full_of_unclosed_tags_are_read_in_linear_time():
    # quadratic before: every "<a" scanned to the end of the page
    assert page_anchors('<p id="x">' + "<a" * 200_000) == frozenset({"x"})
    assert page_anchors("<a" * 200_000 + '<p id="y">') == frozenset({"y"})
