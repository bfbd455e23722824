import pytest

from webspider.scope.prefixes import (
    BadPrefixError,
    PrefixSet,
    normalize_prefix,
    prefix_reason,
)

SPORTS = "http://www.bbc.co.uk/sports"


@pytest.mark.parametrize(
    ("prefixes", "url", "expected"),
    [
        # a plain prefix "up to that point"
        ([SPORTS], "http://www.bbc.co.uk/sports", True),
        ([SPORTS], "http://www.bbc.co.uk/sports/", True),
        ([SPORTS], "http://www.bbc.co.uk/sports/football", True),
        ([SPORTS], "http://www.bbc.co.uk/sportsday", True),
        ([SPORTS], "http://www.bbc.co.uk/news", False),
        ([SPORTS], "http://www.bbc.co.uk/", False),
        # "this folder only"
        ([SPORTS + "/"], "http://www.bbc.co.uk/sportsday", False),
        ([SPORTS + "/"], "http://www.bbc.co.uk/sports/x", True),
        ([SPORTS + "/"], "http://www.bbc.co.uk/sports", False),
        # scheme and host are not the same origin
        ([SPORTS], "https://www.bbc.co.uk/sports", False),
        ([SPORTS], "http://bbc.co.uk/sports", False),
        ([SPORTS], "http://www.bbc.co.uk:8080/sports", False),
        # normalisation as for de-duplication
        (["HTTP://WWW.BBC.CO.UK:80/sports"], "http://www.bbc.co.uk/sports/a", True),
        ([SPORTS], "http://WWW.bbc.co.uk:80/sports/a", True),
        ([SPORTS], "http://www.bbc.co.uk/%73ports/a", True),
        (["http://x.org/caf%C3%A9/"], "http://x.org/caf\u00e9/x", True),
        (["localhost:8000/docs/"], "http://localhost:8000/docs/a", True),
        ([SPORTS], "http://www.bbc.co.uk/sports#frag", True),
        # paths are case-insensitive by default
        ([SPORTS], "http://www.bbc.co.uk/Sports/Football", True),
        (["http://www.bbc.co.uk/SPORTS"], "http://www.bbc.co.uk/sports", True),
        # no scheme: both http and https
        (["www.bbc.co.uk/sports"], "https://www.bbc.co.uk/sports/a", True),
        (["www.bbc.co.uk/sports"], "http://www.bbc.co.uk/sports/a", True),
        # a whole host
        (["http://x.org"], "http://x.org/anything", True),
        (["http://x.org"], "http://x.org.evil.com/", False),
        # a partial query is kept as written
        (["http://x.org/list?s"], "http://x.org/list?sort=1", True),
        (["http://x.org/list?s"], "http://x.org/list?page=1", False),
        # several prefixes, several hosts
        ([SPORTS, "http://x.org/a/"], "http://x.org/a/b", True),
        ([SPORTS, "http://x.org/a/"], "http://x.org/b", False),
        ([], "http://x.org/", False),
        # an internationalised host and its punycode form are one host
        (["http://bücher.test/a/"], "http://xn--bcher-kva.test/a/b", True),
        (["http://xn--bcher-kva.test/a/"], "http://BÜCHER.test/a/b", True),
        (["bücher.test/a/"], "https://xn--bcher-kva.test/a/", True),
        (["http://bücher.test/a/"], "http://bucher.test/a/b", False),
    ],
)
def test_matches(prefixes, url, expected):
    assert PrefixSet(prefixes).matches(url) is expected


@pytest.mark.parametrize(
    ("prefix", "url", "expected"),
    [
        ("http://x.org/Docs/", "http://x.org/Docs/a", True),
        ("http://x.org/Docs/", "http://x.org/docs/a", False),
        ("http://X.ORG/Docs/", "http://x.org/Docs/a", True),  # host still folds
    ],
)
def test_case_sensitive(prefix, url, expected):
    assert PrefixSet([prefix], case_sensitive=True).matches(url) is expected


def test_empty_set_is_false():
    assert not PrefixSet([])
    assert PrefixSet([SPORTS])


@pytest.mark.parametrize(
    "prefix", ["ftp://x.org/", "mailto:a@b.c", "http:///path", "", "http://x y/"]
)
def test_bad_prefixes(prefix):
    with pytest.raises(BadPrefixError):
        normalize_prefix(prefix)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://x.test/docs/a", None),
        ("http://x.test/docs/private/a", "exclude"),
        ("http://x.test/blog/", "include"),
        ("HTTP://X.TEST/DOCS/PRIVATE/A", "exclude"),
    ],
)
def test_prefix_reason_exclude_wins_over_include(url, reason):
    include = PrefixSet(["http://x.test/docs/"])
    exclude = PrefixSet(["http://x.test/docs/private/"])
    assert prefix_reason(url, include, exclude) == reason
    assert prefix_reason(url, PrefixSet([]), PrefixSet([])) is None
