"""Table tests of the pure robots-directive parser."""

from __future__ import annotations

import pytest

from webspider.directives.parse import (
    Directives,
    header_directives,
    meta_directives,
    parse_robots_content,
)

NONE = (False, False)
NOINDEX = (True, False)
NOFOLLOW = (False, True)
BOTH = (True, True)


def pair(d: Directives) -> tuple[bool, bool]:
    return (d.noindex, d.nofollow)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", NONE),
        ("index, follow", NONE),
        ("all", NONE),
        ("noindex", NOINDEX),
        ("nofollow", NOFOLLOW),
        ("noindex, nofollow", BOTH),
        ("noindex,nofollow", BOTH),
        ("noindex nofollow", BOTH),
        ("NOINDEX,NOFOLLOW", BOTH),
        ("none", BOTH),
        ("NoNe", BOTH),
        ("noFolLow , foo", NOFOLLOW),  # the spelling
        ("  nofollow\t,\n noarchive ", NOFOLLOW),
        ("all, noindex", NOINDEX),  # "all" does not loosen
        ("index, noindex", NOINDEX),  # most restrictive wins
        ("noarchive, nosnippet, max-snippet:20", NONE),  # unknown ignored
        ("no-follow, no_index, nofollows", NONE),  # near misses are not directives
        # GNU wget's tests/Test-meta-robots.px spellings
        ("noFolLow ,  foo, bar ", NOFOLLOW),
        (" foo  ,  NOfOllow ,  bar ", NOFOLLOW),
        ("foo,BAr,   nofOLLOw    ", NOFOLLOW),
        ("nofollow", NOFOLLOW),
    ],
)
def test_parse_robots_content(content: str, expected: tuple[bool, bool]) -> None:
    assert pair(parse_robots_content(content)) == expected


@pytest.mark.parametrize(
    ("metas", "expected"),
    [
        ([], NONE),
        ([("robots", "noindex")], NOINDEX),
        ([("webspider", "nofollow")], NOFOLLOW),
        # names arrive lower-cased from the extractor (wget: roBoTS, rObOts, RoBotS)
        ([("robots", "noindex"), ("webspider", "nofollow")], BOTH),
        ([("robots", "noindex"), ("robots", "nofollow")], BOTH),  # combined
        ([("robots", "all"), ("robots", "none")], BOTH),
        ([("googlebot", "noindex, nofollow")], NONE),  # another crawler's
        ([("description", "nofollow")], NONE),
        ([("http-equiv:x-robots-tag", "noindex")], NONE),
    ],
)
def test_meta_directives(
    metas: list[tuple[str, str]], expected: tuple[bool, bool]
) -> None:
    assert pair(meta_directives(metas, "webspider")) == expected


def test_meta_directives_uses_the_product_token_given() -> None:
    assert pair(meta_directives([("mybot", "none")], "MyBot")) == BOTH
    assert pair(meta_directives([("webspider", "none")], "mybot")) == NONE


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], NONE),
        (["noindex"], NOINDEX),
        (["NoFollow"], NOFOLLOW),
        (["noindex, nofollow"], BOTH),
        (["noindex", "nofollow"], BOTH),  # repeated header
        (["none"], BOTH),
        (["all"], NONE),
        (["noarchive, nosnippet"], NONE),
        # user-agent form: ours applies, another bot's does not
        (["webspider: noindex"], NOINDEX),
        (["WebSpider:nofollow"], NOFOLLOW),
        (["webspider: noindex, nofollow"], BOTH),
        (["googlebot: noindex"], NONE),
        (["otherbot: noindex, nofollow"], NONE),
        (["googlebot: nofollow", "webspider: noindex"], NOINDEX),
        (["noindex, otherbot: nofollow"], NOINDEX),
        (["otherbot: nofollow, webspider: noindex"], NOINDEX),
        (["otherbot: none", "nofollow"], NOFOLLOW),
        # directives with values are not user agents
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], NONE),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST, noindex"], NOINDEX),
        (["max-snippet: 20, nofollow"], NOFOLLOW),
        (["webspider: max-snippet: 20, nofollow"], NOFOLLOW),
    ],
)
def test_header_directives(values: list[str], expected: tuple[bool, bool]) -> None:
    assert pair(header_directives(values, "webspider")) == expected


def test_merge_most_restrictive_wins() -> None:
    d = Directives(noindex=True)
    d.merge(Directives(nofollow=True, nofollow_links={"http://a/x"}))
    d.merge(Directives())
    assert pair(d) == BOTH
    assert d.nofollow_links == {"http://a/x"}


def test_single_links() -> None:
    d = Directives()
    assert d.follows("http://site.test/a")
    d.dont_follow("HTTP://Site.test:80/a#frag")
    assert not d.follows("http://site.test/a")
    assert d.follows("http://site.test/b")
    d.follow("http://site.test/a")
    assert d.follows("http://site.test/a")
    d.nofollow = True
    assert not d.follows("http://site.test/b")
