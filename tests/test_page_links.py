"""Link extraction from one parse of a page (webspider.page.links)."""

from urllib.parse import urljoin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webspider.page.links import (
    PAGE,
    REQUISITE,
    extract_css,
    extract_page,
    refresh_url,
)
from webspider.utils.url import is_fetchable

BASE = "http://site.test/dir/page.html"


def links(body: str, url: str = BASE) -> dict[str, tuple[str, str]]:
    page = extract_page(body.encode(), url, "utf-8")
    return {link.url: (link.kind, link.tag) for link in page.links}


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<a href="b.html">', {"http://site.test/dir/b.html": (PAGE, "a")}),
        ('<a href="/root.html">', {"http://site.test/root.html": (PAGE, "a")}),
        ('<a href="//other.test/x">', {"http://other.test/x": (PAGE, "a")}),
        ('<a href="https://x.test/">', {"https://x.test/": (PAGE, "a")}),
        ('<area href="m.html">', {"http://site.test/dir/m.html": (PAGE, "area")}),
        (
            '<link rel="stylesheet" href="s.css">',
            {"http://site.test/dir/s.css": (REQUISITE, "link")},
        ),
        (
            '<link rel="shortcut icon" href="/f.ico">',
            {"http://site.test/f.ico": (REQUISITE, "link")},
        ),
        (
            '<link rel="alternate" href="feed.xml">',
            {"http://site.test/dir/feed.xml": (PAGE, "link")},
        ),
        ('<img src="i.png">', {"http://site.test/dir/i.png": (REQUISITE, "img")}),
        (
            '<script src="j.js"></script>',
            {"http://site.test/dir/j.js": (REQUISITE, "script")},
        ),
        (
            '<iframe src="f.html"></iframe>',
            {"http://site.test/dir/f.html": (REQUISITE, "iframe")},
        ),
        (
            '<frameset><frame src="f2.html"></frameset>',
            {"http://site.test/dir/f2.html": (REQUISITE, "frame")},
        ),
        (
            '<video src="v.mp4" poster="p.jpg"></video>',
            {
                "http://site.test/dir/v.mp4": (REQUISITE, "video"),
                "http://site.test/dir/p.jpg": (REQUISITE, "video"),
            },
        ),
        (
            '<audio src="a.ogg"></audio>',
            {"http://site.test/dir/a.ogg": (REQUISITE, "audio")},
        ),
        ('<embed src="e.swf">', {"http://site.test/dir/e.swf": (REQUISITE, "embed")}),
        (
            '<object data="fig.svg"></object>',
            {"http://site.test/dir/fig.svg": (REQUISITE, "object")},
        ),
        (
            '<input type="image" src="btn.png"><input type="text" src="no.png">',
            {"http://site.test/dir/btn.png": (REQUISITE, "input")},
        ),
        (
            '<picture><source srcset="a.webp 1x, b.webp 2x"></picture>',
            {
                "http://site.test/dir/a.webp": (REQUISITE, "source"),
                "http://site.test/dir/b.webp": (REQUISITE, "source"),
            },
        ),
        (
            '<img srcset="s1.png 100w,s2.png 200w">',
            {
                "http://site.test/dir/s1.png": (REQUISITE, "img"),
                "http://site.test/dir/s2.png": (REQUISITE, "img"),
            },
        ),
        (
            "<style>body{background:url(bg.png)} @import 'i.css';</style>",
            {
                "http://site.test/dir/bg.png": (REQUISITE, "style"),
                "http://site.test/dir/i.css": (REQUISITE, "style"),
            },
        ),
        (
            "<div style=\"background-image: url('d.png')\"></div>",
            {"http://site.test/dir/d.png": (REQUISITE, "style")},
        ),
        ('<a href="x.pdf">', {"http://site.test/dir/x.pdf": (PAGE, "a")}),
        (
            '<a href="mailto:a@b">m</a><a href="javascript:void(0)">j</a><a href="data:text/html,x">d</a><a href="ftp://f/">f</a><a href="file:///etc/passwd">f</a>',
            {},
        ),
        ('<a href="#top">self</a><a href="">empty</a><a>none</a>', {}),
        (
            '<a href=" \n spaced.html \t">',
            {"http://site.test/dir/spaced.html": (PAGE, "a")},
        ),
        ('<a href="q?b=1&amp;a=2">', {"http://site.test/dir/q?b=1&a=2": (PAGE, "a")}),
        (
            '<img src="x.png"><a href="x.png">both</a>',
            {"http://site.test/dir/x.png": (PAGE, "img")},
        ),
        ('<a href="http://[::1/">bad ipv6</a>', {}),
    ],
)
def test_link_table(html, expected):
    assert links(html) == expected


def test_base_href_is_honoured_and_resolved_against_the_page():
    page = extract_page(
        b'<head><base href="/other/"></head><a href="x.html">x</a>', BASE, "utf-8"
    )
    assert page.base_url == "http://site.test/other/"
    assert [link.url for link in page.links] == ["http://site.test/other/x.html"]


def test_duplicates_merge_text_fragment_and_nofollow():
    page = extract_page(
        b'<a href="a.html#s1" rel="external nofollow">First <b>text</b></a>'
        b'<a href="a.html#s2">again</a><a href="n.html" rel="NoFollow">n</a>',
        BASE,
        "utf-8",
    )
    by_url = {link.url: link for link in page.links}
    first = by_url["http://site.test/dir/a.html"]
    assert (first.text, first.fragment, first.nofollow) == ("First text", "s1", False)
    assert by_url["http://site.test/dir/n.html"].nofollow is True
    assert len(page.links) == 2


def test_title_metas_and_refresh():
    page = extract_page(
        b"<html><head><title>\n Hello\n World </title>"
        b'<meta name="ROBOTS" content="noindex"><meta http-equiv="Refresh" content="3; URL=next.html">'
        b'</head><body><noscript><meta http-equiv="refresh" content="0;url=ns.html"></noscript>'
        b"<svg><title>not the title</title></svg></body></html>",
        BASE,
        "utf-8",
    )
    assert page.title == "Hello World"
    assert ("robots", "noindex") in page.metas
    assert [link.url for link in page.links] == ["http://site.test/dir/next.html"]


def test_encoding_is_used_for_text():
    body = "<title>Café</title><a href='é.html'>é</a>".encode("latin-1")
    page = extract_page(body, BASE, "latin-1")
    assert page.title == "Café"
    assert page.links[0].url == "http://site.test/dir/é.html"


@pytest.mark.parametrize(
    "body", [b"", b"\x00\x01\x02", b"<<<>>>", b"<a href=", b"\xff" * 100]
)
def test_garbage_never_raises(body):
    page = extract_page(body, BASE, "utf-8")
    assert page.links == []


def test_refresh_url():
    assert refresh_url("5; url=http://x/") == "http://x/"
    assert refresh_url("0;URL='a.html'") == "a.html"
    assert refresh_url("10") is None


def test_srcset_candidates():
    page = extract_page(b'<img srcset="a.png 1x, b.png 2x,c.png">', BASE, "utf-8")
    assert [link.url.rsplit("/", 1)[1] for link in page.links] == [
        "a.png",
        "b.png",
        "c.png",
    ]


def test_css_response_links_are_relative_to_the_stylesheet():
    page = extract_css(
        b"body{background:url(../img/bg.png)}", "http://site.test/css/s.css"
    )
    assert [link.url for link in page.links] == ["http://site.test/img/bg.png"]


def test_every_fragment_of_a_url_is_kept_for_the_anchor_check():
    page = extract_page(
        b'<a href="/b#one">One</a><a href="/b#two">Two</a><a href="/b">B</a>'
        b'<a href="/b#one">One again</a><a href="/c">C</a>',
        "https://s/",
    )
    b, c = page.links
    assert (b.url, b.fragment, b.text) == ("https://s/b", "one", "One")
    # "#one" again is the same anchor; texts are taken when asked for
    assert {f: page.text(t) for f, t in b.more_fragments.items()} == {"two": "Two"}
    assert c.more_fragments is None


def test_links_within_the_page_are_kept_apart():
    page = extract_page(
        b'<a href="#top">Top</a><a href=" #sec ">Sec</a><a href="#">nothing</a>'
        b'<a href="/x#y">elsewhere</a>',
        "https://s/page",
    )
    assert [(f, page.text(t)) for f, t in page.local_fragments] == [
        ("top", "Top"),
        ("sec", "Sec"),
    ]
    assert [link.url for link in page.links] == ["https://s/x"]


def _urljoined(base: str, href: str) -> str | None:
    """What a link value resolves to, the slow way."""
    href = href.strip(" \t\n\r\f")
    href = href.replace("\n", "").replace("\t", "").replace("\r", "")
    if not href or href.startswith("#"):
        return None
    try:
        absolute = urljoin(base, href)
    except ValueError:
        return None
    return absolute if is_fetchable(absolute) else None


# Values of one page share a join per URL without its fragment: the answer
# must stay urljoin's, fragments, empty fragments and odd schemes included.
_HREFS = st.lists(
    st.builds(
        "".join,
        st.tuples(
            st.sampled_from(["", "/", "../", "//h2", "https://h3", "mailto:", "a:"]),
            st.text(alphabet="ab/.?", max_size=4),
            st.sampled_from(["", "#", "#f", "#g", "#f#g", " "]),
        ),
    ),
    max_size=12,
)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["http://h/d/p.html", "https://[::1]/x/", "http://h"]), _HREFS)
def test_every_value_resolves_as_urljoin_would(base, hrefs):
    body = "".join(f'<a href="{href}">' for href in hrefs).encode()
    page = extract_page(body, base, "utf-8")
    values = [href for href in hrefs if href]  # href="" is no link
    assert page.resolved == {href: _urljoined(base, href) for href in values}
    unsupported = [
        href
        for href in set(values)
        if _urljoined(base, href) is None and href.strip()[:1] not in ("", "#")
    ]
    assert page.unsupported_links == len(unsupported)
