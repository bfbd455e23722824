import pytest

from webspider.reports.anchors import AnchorLedger, is_anchor_fragment, page_anchors


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


def test_fragments_linked_before_and_after_the_page_is_fetched():
    ledger = AnchorLedger(max_referrers=10)
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


def test_fragments_of_pages_never_fetched_are_not_reported():
    ledger = AnchorLedger(max_referrers=10)
    ledger.add_link("pdf", "http://s/doc.pdf", "page=2", ("p", "", "a"))
    assert ledger.records() == []


def test_anchors_of_a_page_full_of_unclosed_tags_are_read_in_linear_time():
    # quadratic before: every "<a" scanned to the end of the page
    assert page_anchors('<p id="x">' + "<a" * 200_000) == frozenset({"x"})
    assert page_anchors("<a" * 200_000 + '<p id="y">') == frozenset({"y"})
