from urllib.parse import urljoin

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from webspider.utils.urljoin import UrlJoiner


def joined(base, href):
    try:
        return urljoin(base, href)
    except ValueError:
        return ValueError


def fast(base, href):
    try:
        return UrlJoiner(base).join(href)
    except ValueError:
        return ValueError


BASES = [
    "http://127.0.0.1:8765/index.html",
    "http://127.0.0.1:8765/library/os.html",
    "https://docs.python.org/3/library/os.path.html?x=1#frag",
    "http://h",
    "http://h/",
    "http://h/a/b/",
    "http://h/a/b/c",
    "http://h/a//b/c",
    "http://h/a/./b/../c/d",
    "http://h/a/b;p/c;q?x#y",
    "http://u:pw@H:80/a/b",
    "HTTP://h/a/b",
    "http://[::1]:8000/a/b",
    "http://[bad/a/b",
    "ftp://h/a/b",
    "mailto:x@y",
    "",
    "/relative/base",
]

HREFS = [
    "os.html",
    "os.html#os.getcwd",
    "library/os.html#os.getcwd",
    "../_static/pygments.css",
    "../../a/b",
    "../../../../../x",
    "../",
    "../?q=1",
    "/",
    "/3/whatsnew/",
    "/a/b?x=1&y=2#f",
    "//other/x",
    "https://example.org/x",
    "http://example.org",
    "http://example.org?q",
    "HTTP://example.org/x",
    "http:x",
    "http:///x",
    "https://[::1]/x",
    "https://[bad/x",
    "https://exämple.org/x",
    "mailto:a@b",
    "javascript:void(0)",
    "a:b",
    "a/b:c",
    "x?",
    "x#",
    "x?#f",
    "?q",
    "#f",
    "",
    ".",
    "..",
    "./x",
    "x/./y",
    "x/../y",
    "x//y",
    ".hidden",
    "x;p",
    "x;",
    "a\\b",
    " x",
    "x y",
    "x\ty",
    "x\n",
    "é/ü.html",
    "%7Efoo",
    "x?a=b?c#d#e",
    "x?a=http://y/z",
]


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("href", HREFS)
def test_table(base, href):
    assert fast(base, href) == joined(base, href)


_BASE = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "", "http:"]),
        st.sampled_from(["h", "H:80", "u@h", "[::1]", "[x", "h.example", ""]),
        st.text(alphabet="/a.;?#", max_size=10),
    ),
)
_HREF = st.one_of(
    st.text(alphabet="/a.;:?#\\ \t%éb", max_size=12),
    st.builds(
        "".join,
        st.tuples(
            st.sampled_from(["", "../", "../../", "/", "//", "http://h", "https://"]),
            st.text(alphabet="/ab.?#;:", max_size=10),
        ),
    ),
)


@settings(max_examples=3000, deadline=None)
@given(_BASE, _HREF)
@example("http://h/a/b", "../../../x")
def test_same_as_urljoin(base, href):
    assert fast(base, href) == joined(base, href)


def test_one_joiner_many_links():
    joiner = UrlJoiner("http://h/a/b/c.html")
    for href in HREFS:
        try:
            expected = urljoin("http://h/a/b/c.html", href)
        except ValueError:
            continue
        assert joiner.join(href) == expected
