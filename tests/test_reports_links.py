"""The broken-link ledger, over records in memory and in the crawl state."""

from __future__ import annotations

import json

from tests.support.records import reopen
from tests.support.records import store as store  # noqa: PLC0414
from webspider.frontier.sqlite import SQLiteState
from webspider.page.links import Link
from webspider.records import flagged
from webspider.reports.links import (
    NAMESPACES,
    NS_REFERRERS,
    STATES_KEPT,
    LinkLedger,
    Outcome,
    url_id,
    url_ids,
)
from webspider.utils.urlcodes import CODE_LENGTH, ID_LENGTH, NS_CODES, UrlCodes
from webspider.utils.waitinglinks import REPORTS


def broken(url: str, status: int | None = 404, **kw) -> Outcome:
    return Outcome(url=url, status=status, **kw)


def test_one_record_per_broken_url_with_all_referrers(store):
    ledger = LinkLedger(store)
    ledger.add_page("p1", [("x", "X one", "a"), ("ok", "fine", "a")])
    ledger.add_page("p2", [("x", "X two", "a"), ("img", "Logo", "img")])
    ledger.good("ok")
    ledger.broken("x", broken("http://s/x"))
    ledger.add_page("p3", [("x", "", "a"), ("ok", "fine", "a")])  # after the outcome
    ledger.good("img")
    [record] = ledger.records()
    assert record["url"] == "http://s/x"
    assert record["referrer_count"] == 3
    assert [(r["url"], r["text"]) for r in record["referrers"]] == [
        ("p1", "X one"),
        ("p2", "X two"),
        ("p3", ""),
    ]
    assert ledger.broken_count == 1
    assert ledger.pending_count() == 0


def test_one_referrer_per_page_and_a_page_read_twice_adds_nothing(store):
    ledger = LinkLedger(store)
    ledger.add_page("p1", [("x", "first", "a"), ("x", "second", "img")])
    ledger.add_page("p1", [("x", "first", "a")])  # fetched again after a kill
    ledger.broken("x", broken("x"))
    ledger.add_page("p2", [("x", "t", "a")])
    ledger.add_page("p2", [("x", "t", "a")])
    [record] = ledger.records()
    assert record["referrer_count"] == 2
    assert [(r["url"], r["text"], r["tag"]) for r in record["referrers"]] == [
        ("p1", "first", "a"),
        ("p2", "t", "a"),
    ]


def test_a_parsed_page_is_recorded_as_its_link_tuples_are(store):
    links = [
        Link("http://s/x", "page", "a", "X"),
        Link("http://s/logo.png", "requisite", "img", "Logo"),
        Link("http://s/x", "page", "img", "second"),  # the first one counts
    ]
    keys = [link.url for link in links]
    by_parsed = LinkLedger(store)
    by_parsed.add_parsed("p1", keys, links)
    by_tuples = LinkLedger()
    by_tuples.add_page(
        "p1", [(k, link.text, link.tag) for k, link in zip(keys, links, strict=True)]
    )
    for ledger in (by_parsed, by_tuples):
        for key in keys:
            ledger.broken(key, broken(key))
    assert list(by_parsed.records()) == list(by_tuples.records())
    [logo, x] = by_parsed.records()
    assert logo["referrers"] == [{"url": "p1", "text": "Logo", "tag": "img"}]
    assert x["referrers"] == [{"url": "p1", "text": "X", "tag": "a"}]


def test_good_targets_drop_their_referrers_and_later_links_cost_nothing(store):
    ledger = LinkLedger(store)
    ledger.add_page("p1", [("ok", "a", "a")])
    ledger.flush()  # what a commit does
    assert store.records(NS_REFERRERS).count() == 1
    ledger.good("ok")
    ledger.add_page("p2", [("ok", "a", "a")])
    ledger.flush()
    assert store.records(NS_REFERRERS).count() == 0
    assert list(ledger.records()) == []


def test_referrers_are_capped_but_all_counted(store):
    ledger = LinkLedger(store, max_referrers=2)
    ledger.broken("x", broken("x"))
    for i in range(5):
        ledger.add_page(f"p{i}", [("x", "t", "a")])
    [record] = ledger.records()
    assert record["referrer_count"] == 5
    assert [r["url"] for r in record["referrers"]] == ["p0", "p1"]
    assert store.records(NS_REFERRERS).count() == 2


def test_referrers_found_before_the_outcome_are_listed_up_to_the_cap(store):
    ledger = LinkLedger(store, max_referrers=2)
    for i in range(5):
        ledger.add_page(f"p{i}", [("x", "t", "a")])
    ledger.broken("x", broken("x"))
    [record] = ledger.records()
    assert record["referrer_count"] == 5
    assert len(record["referrers"]) == 2


def test_skipped_targets_forget_referrers_and_are_never_reported(store):
    ledger = LinkLedger(store)
    ledger.add_page("p", [("ext", "t", "a")])
    ledger.skipped("ext")
    ledger.add_page("q", [("ext", "t", "a")])
    assert ledger.pending_count() == 0
    assert list(ledger.records()) == []


def test_first_failure_wins_and_a_good_url_stays_good(store):
    ledger = LinkLedger(store)
    ledger.broken("x", broken("x", 404))
    ledger.broken("x", broken("x", 500))
    ledger.good("y")
    ledger.broken("y", broken("y", 500))
    assert [r["status"] for r in ledger.records()] == [404]


def test_redirect_hops_only_reported_when_linked(store):
    ledger = LinkLedger(store)
    ledger.add_page("p", [("a", "A", "a")])
    ledger.broken("a", broken("a", redirected_to="b"))
    ledger.broken("b", broken("b", requested=False))
    assert [r["url"] for r in ledger.records()] == ["a"]
    assert ledger.broken_count == 1  # counts what the file lists
    ledger.add_page("q", [("b", "B", "a")])
    assert [r["url"] for r in ledger.records()] == ["a", "b"]
    assert ledger.broken_count == 2


def test_redirect_to_an_already_requested_url_shares_its_outcome(store):
    ledger = LinkLedger(store)
    ledger.add_page("p", [("a", "A", "a"), ("c", "C", "a")])
    ledger.redirected("a", "http://s/a", "b")  # b still unknown
    ledger.broken("b", broken("http://s/b", requested=False))
    ledger.good("d")
    ledger.redirected("c", "http://s/c", "d")  # d known good
    [record] = ledger.records()
    assert record["url"] == "http://s/a"
    assert record["redirected_to"] == "http://s/b"
    assert ledger.pending_count() == 0


def test_internal_and_external_counts(store):
    ledger = LinkLedger(store)
    ledger.broken("a", broken("a"))
    ledger.broken("b", broken("b", internal=False))
    assert (ledger.broken_internal, ledger.broken_external) == (1, 1)


def test_version_changes_when_the_file_would(store):
    ledger = LinkLedger(store)
    v0 = ledger.version
    ledger.add_page("p", [("x", "t", "a")])
    assert ledger.version == v0  # pending only: nothing to write
    ledger.broken("x", broken("x"))
    v1 = ledger.version
    assert v1 > v0
    ledger.add_page("q", [("x", "t", "a")])
    assert ledger.version == v1  # held until a commit
    ledger.flush()
    assert ledger.version > v1


def test_records_are_streamed_in_url_order(store):
    ledger = LinkLedger(store)
    for key in ("c", "a", "b"):
        ledger.broken(key, broken(f"http://s/{key}"))
    assert [r["url"] for r in ledger.records()] == [
        "http://s/a",
        "http://s/b",
        "http://s/c",
    ]


def test_a_resumed_ledger_continues_and_a_new_crawl_clears_it(request, store):
    ledger = LinkLedger(store)
    ledger.add_page("p1", [("x", "t", "a"), ("ok", "t", "a")])
    ledger.redirected("r", "http://s/r", "x")
    ledger.good("ok")
    ledger.flush()  # crawl_state_committing, then the commit
    store = reopen(request, store)
    resumed = LinkLedger(store)
    resumed.add_page("p2", [("x", "t", "a"), ("ok", "t", "a")])
    resumed.broken("x", broken("http://s/x"))
    records = list(resumed.records())
    assert [r["url"] for r in records] == ["http://s/r", "http://s/x"]
    assert [r["url"] for r in records[1]["referrers"]] == ["p1", "p2"]
    assert resumed.broken_count == 2
    assert resumed.pending_count() == 0
    assert LinkLedger(store).broken_count == 2  # the totals are kept too
    resumed.clear()
    assert list(resumed.records()) == []
    assert resumed.broken_count == 0
    assert all(store.records(ns).count() == 0 for ns in NAMESPACES)


def test_referrers_wait_in_memory_until_a_commit_and_are_not_written_if_good(store):
    ledger = LinkLedger(store)
    ledger.add_page("p1", [("ok", "t", "a"), ("ext", "t", "a"), ("x", "t", "a")])
    ledger.good("ok")
    ledger.skipped("ext")
    referrers = store.records(NS_REFERRERS)
    assert referrers.count() == 0
    ledger.flush()
    x_code, p1_code = (
        i[:CODE_LENGTH].replace("+", "-").replace("/", "_")
        for i in url_ids(["x", "p1"])
    )
    assert [k for k, _ in referrers.items()] == [x_code + "\n" + p1_code]
    ledger.add_page("p2", [("x", "t", "a")])
    ledger.broken("x", broken("x"))
    assert referrers.count() == 1  # p2's link is still held
    ledger.flush()  # what a commit does: written, the target being broken
    assert referrers.count() == 2
    [record] = ledger.records()
    assert record["referrer_count"] == 2


def test_remembered_states_follow_the_ledgers_writes(store):
    # the ledger remembers the states it read or wrote (STATES_KEPT a
    # generation): past two generations a target is read again, still right
    ledger = LinkLedger(store)
    ledger.add_page("p1", [("x", "t", "a"), ("y", "t", "a")])
    ledger.flush()
    ledger.good("x")
    others = [(f"o{i}", "t", "a") for i in range(2 * STATES_KEPT + 1)]
    ledger.add_page("p2", others)
    ledger.flush()
    ledger.add_page("p3", [("x", "t", "a"), ("y", "t", "a")])
    ledger.broken("y", broken("y"))
    ledger.flush()
    [record] = ledger.records()
    assert record["url"] == "y"
    assert [r["url"] for r in record["referrers"]] == ["p1", "p3"]
    assert ledger.pending_count() == len(others)


def test_a_shared_states_link_states_are_read_every_time(tmp_path):
    # another worker's ledger writes the states of a shared state (Redis:
    # the flag is its; an embedded state's records stand in for them here)
    store = SQLiteState(tmp_path / "state.sqlite3")
    store.shared = True
    mine, theirs = LinkLedger(store), LinkLedger(store)
    mine.add_page("p1", [("x", "t", "a")])
    mine.flush()  # x read: unknown
    theirs.broken("x", broken("x"))
    mine.add_page("p2", [("x", "t", "a")])
    mine.flush()  # x read again: broken, p2 counted at once
    [record] = mine.records()
    assert record["referrer_count"] == 2
    store.close()


def test_waiting_referrers_are_keyed_on_codes_and_a_url_is_written_once(store):
    ledger = LinkLedger(store)
    page = "http://site.test/section/a-rather-long-page-name.html"
    targets = [f"http://site.test/section/target-{i}.html" for i in range(20)]
    ledger.add_page(page, [(t, f"text {i}", "a") for i, t in enumerate(targets)])
    ledger.add_page(page + "?2", [(targets[0], "logo", "img")])
    ledger.flush()
    rows = list(store.records(NS_REFERRERS).items())
    assert len(rows) == 21
    for key, value in rows:
        assert len(key) == CODE_LENGTH + 1 + CODE_LENGTH
        assert "site.test" not in key
        assert "site.test" not in json.dumps(value)
    values = [value for _, value in rows]
    # behind the row's flags (the reports' bit: the row is shared with the
    # mirror's waiting link, webspider.utils.waitinglinks)
    assert flagged(REPORTS, "\0img\0logo") in values
    assert flagged(REPORTS, "text 7") in values  # the text alone for <a>
    # the URLs once, without their site (its code, "1"), in the crawl's codes
    assert sorted(url for _, url in store.records(NS_CODES).items()) == sorted(
        [
            "1/section/a-rather-long-page-name.html",
            "1/section/a-rather-long-page-name.html?2",
        ]
        + [t.replace("http://site.test", "1") for t in targets]
    )
    ledger.broken(targets[0], broken(targets[0]))
    [record] = ledger.records()
    assert record["referrers"] == [
        {"url": page, "text": "text 0", "tag": "a"},
        {"url": page + "?2", "text": "logo", "tag": "img"},
    ]


def test_url_ids_are_stable_distinct_and_batch_equals_single():
    urls = [f"http://s.test/p/{i}.html" for i in range(1000)] + ["", "é\u00ff"]
    ids = url_ids(urls)
    assert ids == [url_id(u) for u in urls]
    assert len(set(ids)) == len(urls)
    assert all(len(i) == ID_LENGTH and "\n" not in i for i in ids)
    # stable across processes and versions: a resumed crawl finds its rows
    assert url_id("http://s.test/") == "GZS4sCi9XBon"
    assert url_ids([]) == []


def pages_sharing_a_code(count: int) -> list[str]:
    """``count`` page URLs whose ids start alike (their codes collide)."""
    urls = [f"http://s.test/p/{i}" for i in range(20000)]
    by_code: dict[str, list[str]] = {}
    for url, url_id_ in zip(urls, url_ids(urls), strict=True):
        code = url_id_[:CODE_LENGTH].replace("+", "-").replace("/", "_")
        by_code.setdefault(code, []).append(url)
    return max(by_code.values(), key=len)[:count]


def test_pages_whose_ids_start_alike_get_codes_of_their_own(store):
    first, second = pages_sharing_a_code(2)
    one, other = LinkLedger(store), LinkLedger(store)  # two workers of a state
    one.add_page(first, [("t", "from first", "a")])
    other.add_page(second, [("t", "from second", "img")])
    other.flush()
    one.flush()
    one.add_page(first, [("t", "from first", "a")])  # read again after a kill
    one.flush()
    codes = UrlCodes(store).find([first, second])
    assert sorted(len(code) for code in codes.values()) == [4, 5]
    assert codes[first] != codes[second]
    one.broken("t", broken("t"))
    [record] = one.records()
    assert record["referrer_count"] == 2
    assert record["referrers"] == sorted(
        [
            {"url": first, "text": "from first", "tag": "a"},
            {"url": second, "text": "from second", "tag": "img"},
        ],
        key=lambda r: r["url"],
    )


def test_pages_whose_ids_start_alike_in_one_batch(store):
    pages = pages_sharing_a_code(2)
    ledger = LinkLedger(store)
    for page in pages:
        ledger.add_page(page, [("t", page[-3:], "a")])
    ledger.broken("t", broken("t"))
    ledger.flush()
    ledger.add_page(pages[1], [("t", "late, again", "a")])
    ledger.flush()
    [record] = ledger.records()
    assert record["referrer_count"] == 2
    assert sorted(r["url"] for r in record["referrers"]) == sorted(pages)
