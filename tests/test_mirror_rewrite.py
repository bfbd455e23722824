import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.scanref import reference_scan
from webspider.mirror.rewrite import (
    ascii_compatible,
    rewrite_css,
    rewrite_html,
    rewrite_spans,
)
from webspider.page import scan as htmlscan
from webspider.page.links import LINK_RULES, LinkRule


def upper(url, kind):
    """A resolver that marks what it was asked."""
    return f"{kind.upper()}:{url}"


def nothing(url, kind):
    return None


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        # quoted, single-quoted, unquoted; attribute case; other attributes kept
        ('<a href="x">', '<a href="LINK:x">'),
        ("<a href='x' class=c>", "<a href='LINK:x' class=c>"),
        ("<A HREF=x>", "<A HREF=LINK:x>"),
        ('<a  href = "x" >', '<a  href = "LINK:x" >'),
        ('<img src="i.png" alt="x">', '<img src="LINK:i.png" alt="x">'),
        (
            '<link rel=stylesheet href="s.css">',
            '<link rel=stylesheet href="LINK:s.css">',
        ),
        ('<script src="j.js"></script>', '<script src="LINK:j.js"></script>'),
        ('<base href="http://h/">', '<base href="BASE:http://h/">'),
        (
            '<video poster="p.jpg" src=v.mp4>',
            '<video poster="LINK:p.jpg" src=LINK:v.mp4>',
        ),
        # character references are undone for the resolver, done for the page
        ('<a href="/a?x=1&amp;y=2">', '<a href="LINK:/a?x=1&amp;y=2">'),
        # srcset candidates, descriptors and spacing kept
        (
            '<img srcset="a.png 1x, b.png 2x,c.png">',
            '<img srcset="LINK:a.png 1x, LINK:b.png 2x,LINK:c.png">',
        ),
        # CSS in style attributes and <style>
        (
            "<p style=\"background:url('b.png')\">",
            "<p style=\"background:url('LINK:b.png')\">",
        ),
        (
            '<p style="background:url(&quot;b.png&quot;)">',
            '<p style="background:url(&quot;LINK:b.png&quot;)">',
        ),
        (
            '<style>@import "a.css"; x{y:url(b.png)}</style>',
            '<style>@import "LINK:a.css"; x{y:url(LINK:b.png)}</style>',
        ),
        # what is not markup is not touched
        ('<!-- <a href="x"> -->', '<!-- <a href="x"> -->'),
        ("<script>s='<a href=x>'</script>", "<script>s='<a href=x>'</script>"),
        ("<textarea><a href=x></textarea>", "<textarea><a href=x></textarea>"),
        ("<title><img src=x></title>", "<title><img src=x></title>"),
        ("<p>style=url(x) href=x</p>", "<p>style=url(x) href=x</p>"),
        ("<style>/* url(x) */</style>", "<style>/* url(x) */</style>"),
        # not links
        ('<a name="x">', '<a name="x">'),
        ('<a href="">', '<a href="">'),
        ("<a href>", "<a href>"),
        ('<div data-href="x">', '<div data-href="x">'),
        # broken markup is left as it is
        ('<a href="x', '<a href="x'),
        ("<", "<"),
        ("<a", "<a"),
    ],
)
def test_rewrite_html(html, expected):
    out, count = rewrite_html(html.encode(), upper)
    assert out.decode() == expected
    assert (count > 0) == (html != expected)


def test_bytes_outside_the_values_are_kept_exactly():
    # latin-1 text, odd spacing, comments, an unknown entity: all kept
    page = (
        b"<!doctype html>\n<html><head><meta charset=iso-8859-1>"
        b"<title>Caf\xe9 &foo;</title></head>\r\n<body>\t<p>\xe9t\xe9</p>"
        b"<a   href='/x'  data-x=\"\xe9\">\xe9</a><!-- \xff --></body></html>"
    )
    out, count = rewrite_html(page, lambda u, k: "y.html", "iso-8859-1")
    assert count == 1
    assert out == page.replace(b"href='/x'", b"href='y.html'")


def test_nothing_to_change_returns_the_same_bytes():
    page = b'<a href="x">\xe9</a>'
    out, count = rewrite_html(page, nothing, "latin-1")
    assert (out, count) == (page, 0)


def test_replacements_are_escaped_for_html():
    out, _ = rewrite_html(b"<a href='x'>", lambda u, k: "a'b\"c&d<e>")
    assert out == b"<a href='a&#39;b&quot;c&amp;d&lt;e&gt;'>"


def test_non_ascii_urls_reach_the_resolver_decoded():
    seen = []
    rewrite_html(
        '<a href="/café">'.encode("cp1252"), lambda u, k: seen.append(u), "cp1252"
    )
    assert seen == ["/café"]


def test_utf16_pages_are_not_rewritten():
    page = '<a href="x">'.encode("utf-16")
    assert rewrite_html(page, upper, "utf-16") == (page, 0)
    assert not ascii_compatible("utf-16")
    assert ascii_compatible("utf-8") and ascii_compatible("cp1252")
    assert ascii_compatible(None)


def test_custom_rules():
    out, _ = rewrite_html(
        b'<x-img data-src="a"><img src="b">',
        upper,
        rules=[LinkRule("x-img", "data-src")],
    )
    assert out == b'<x-img data-src="LINK:a"><img src="b">'


@pytest.mark.parametrize(
    ("css", "expected"),
    [
        ("a{b:url(x.png)}", "a{b:url(LINK:x.png)}"),
        ("a{b:url( 'x.png' )}", "a{b:url( 'LINK:x.png' )}"),
        ('a{b:URL("x.png")}', 'a{b:URL("LINK:x.png")}'),
        ('@import "a.css";', '@import "LINK:a.css";'),
        ("@import url(a.css) screen;", "@import url(LINK:a.css) screen;"),
        ("/* url(x) */ a{}", "/* url(x) */ a{}"),
        (
            "a{content:'url(x)'}",
            "a{content:'url(LINK:x)'}",
        ),  # a regex scan, as browsers' fetch list
    ],
)
def test_rewrite_css(css, expected):
    out, _ = rewrite_css(css.encode(), upper)
    assert out.decode() == expected


def test_css_bytes_kept_when_nothing_changes():
    css = b"@charset 'latin1'; a{content:'\xe9'} b{c:url(x.png)}"
    assert rewrite_css(css, nothing, "latin-1") == (css, 0)


# The fast tag scan must tokenize exactly as the attribute loop it skips:
# compare both on generated tag soup (quotes left open, stray "=", "/",
# tags cut off, raw text, comments).
_PIECES = [
    "x",
    "a.png 1x, b.png",
    "url(u.png)",
    "&amp;",
    "#f",
    "?q=1",
    "",
    ">",
    "/",
    "nofollow",
    "href",
]
_VALUE = st.one_of(
    st.sampled_from(_PIECES).map(lambda v: f'"{v}"'),
    st.sampled_from(_PIECES).map(lambda v: f"'{v}'"),
    st.sampled_from(["x", "a/", "u?a=1&amp;b", "'x", '"x', "x/>", ""]),
    st.sampled_from(_PIECES).map(lambda v: f'"{v}'),  # never closed
)
_ATTR = st.tuples(
    st.sampled_from([" ", "  ", "\n", "/", "", " / "]),
    st.sampled_from(
        ["href", "HREF", "src", "srcset", "style", "alt", "x-y", "=", "rel", "hreflang"]
    ),
    st.one_of(
        st.just(""),
        st.tuples(st.sampled_from(["=", " = ", "=\n", " ="]), _VALUE).map("".join),
    ),
).map("".join)
_TAG = st.tuples(
    st.sampled_from(
        ["<a", "<A", "<img", "<base", "<style", "<STYLE", "<script", "<div"]
    ),
    st.lists(_ATTR, max_size=4).map("".join),
    st.sampled_from([">", "/>", " >", "", "<"]),
).map("".join)
_SOUP = st.lists(
    st.one_of(
        _TAG,
        st.sampled_from(
            ["text", "</style>", "</script>", "<!--", "-->", "style", "Style"]
        ),
    ),
    max_size=8,
).map("".join)


def _reference_rewrite_html(body, resolve):
    found = reference_scan(body)
    return rewrite_spans(body, found.spans, resolve, "utf-8")


@settings(max_examples=1000, deadline=None)
@given(_SOUP)
def test_fast_scan_matches_the_reference_scan(soup):
    body = soup.encode()
    assert rewrite_html(body, upper) == _reference_rewrite_html(body, upper)
    assert htmlscan.scan(body, "utf-8", LINK_RULES).links == reference_scan(body).links
