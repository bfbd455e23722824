import random
from urllib.parse import quote

import pytest

from webspider.mirror.paths import (
    _HREF_SAFE,
    _PLAIN_URL,
    NAME_MAX,
    _href_segment,
    _url_path,
    conflict_name,
    host_folder,
    relative_href,
    shorten,
    url_path,
)

H = "http://h"


@pytest.mark.parametrize(
    ("url", "html", "expected"),
    [
        # layout
        ("http://site.test/", True, ("site.test", "index.html")),
        ("http://site.test", True, ("site.test", "index.html")),
        ("http://site.test:8080/a/b", False, ("site.test_8080", "a", "b")),
        ("http://site.test:80/a", False, ("site.test", "a")),
        ("https://site.test:443/a", False, ("site.test", "a")),
        ("https://site.test:80/a", False, ("site.test_80", "a")),
        ("http://SITE.test/A", False, ("site.test", "A")),  # path case kept
        ("http://h/dir/", True, ("h", "dir", "index.html")),
        ("http://h/dir/", False, ("h", "dir", "index.html")),
        # wget -E: .html appended to HTML without an HTML extension
        ("http://h/page", True, ("h", "page.html")),
        ("http://h/page.php", True, ("h", "page.php.html")),
        ("http://h/page.HTM", True, ("h", "page.HTM")),
        ("http://h/page.xhtml", True, ("h", "page.xhtml")),
        ("http://h/page", False, ("h", "page")),
        # query strings: after "@", escaped, never decoded
        ("http://h/p?b=2&a=1", False, ("h", "p@b=2&a=1")),
        ("http://h/p?b=2&a=1", True, ("h", "p@b=2&a=1.html")),
        ("http://h/?x=1", True, ("h", "index.html@x=1.html")),
        ("http://h/p?x=/../../e", False, ("h", "p@x=%2F..%2F..%2Fe")),
        ("http://h/p?x=%2F", False, ("h", "p@x=%252F")),
        ("http://h/a@b", False, ("h", "a%40b")),  # "@" in a name is not a query
        # hostile: dot segments, encoded dots, double encoding
        ("http://h/../../etc/passwd", False, ("h", "etc", "passwd")),
        ("http://h/a/../../../b", False, ("h", "b")),
        ("http://h/a/./b/.", False, ("h", "a", "b", "index.html")),
        ("http://h/a/%2e%2e/%2E%2E/b", False, ("h", "a", "%2E%2E", "%2E%2E", "b")),
        ("http://h/%2e/x", False, ("h", "%2E", "x")),
        ("http://h/%252e%252e/x", False, ("h", "%252e%252e", "x")),
        # hostile: separators and control bytes inside a segment
        ("http://h/a%2f..%2f..%2fb", False, ("h", "a%2F..%2F..%2Fb")),
        ("http://h/a%5c..%5cb", False, ("h", "a%5C..%5Cb")),
        ("http://h/a\\..\\b", False, ("h", "a%5C..%5Cb")),
        ("http://h/nul%00byte.txt", False, ("h", "nul%00byte.txt")),
        ("http://h/x%0a%0d%7f", False, ("h", "x%0A%0D%7F")),
        ("http://h/%25", False, ("h", "%25")),
        ("http://h/a b", False, ("h", "a%20b")),
        ("http://h/a//b", False, ("h", "a", "b")),
        # text is kept readable; invisible/bidi characters are not
        ("http://h/caf%C3%A9", False, ("h", "café")),
        ("http://h/%E2%80%AEgpj.exe", False, ("h", "%E2%80%AEgpj.exe")),
        ("http://h/%FF%FE", False, ("h", "%FF%FE")),
        # reserved names (Windows) and trailing dots
        ("http://h/con", False, ("h", "%63on")),
        ("http://h/CON.txt", False, ("h", "%43ON.txt")),
        ("http://h/com1", False, ("h", "%63om1")),
        ("http://h/lpt9.x", False, ("h", "%6Cpt9.x")),
        ("http://h/console", False, ("h", "console")),
        ("http://h/a.", False, ("h", "a%2E")),
        ("http://h/a%20", False, ("h", "a%20")),
        # hosts: IPv6, "_" escaped so host_port is unambiguous
        ("http://[::1]:8080/x", False, ("%3A%3A1_8080", "x")),
        ("http://a_1/x", False, ("a%5F1", "x")),
        ("http://127.0.0.1:8000/x", False, ("127.0.0.1_8000", "x")),
    ],
)
def test_url_path(url, html, expected):
    assert url_path(url, html) == expected


HOSTILE = [
    "http://h/" + "../" * 50 + "etc/passwd",
    "http://h/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "http://h/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
    "http://h/%252e%252e%252fetc",
    "http://h/..%5c..%5c..%5cwindows",
    "http://h/..\\..\\..\\x",
    "http://h/%00",
    "http://h/%00/%00",
    "http://h/.%00./x",
    "http://h/?../../x",
    "http://h/" + "a" * 1000,
    "http://h/" + "é" * 400,
    "http://h/%C0%AE%C0%AE/x",  # overlong UTF-8 dots
    "http://h/%E3%80%82%E3%80%82/x",  # ideographic full stops
    "http://../x",
    "http://./x",
    "http:///x",
    "http://%2e%2e/x",
]


@pytest.mark.parametrize("url", HOSTILE)
@pytest.mark.parametrize("html", [False, True])
def test_hostile_urls_give_plain_names(url, html):
    path = url_path(url, html)
    for name in path:
        assert name not in ("", ".", "..")
        assert "/" not in name and "\\" not in name and "\x00" not in name
        assert not any(ord(c) < 32 or ord(c) == 127 for c in name)
        assert len(name.encode("utf-8")) <= NAME_MAX
        assert not name.endswith((".", " "))


def test_long_names_are_shortened_distinctly():
    a = url_path(H + "/" + "x" * 300 + "1.png")
    b = url_path(H + "/" + "x" * 300 + "2.png")
    assert a != b
    assert all(len(n.encode()) == NAME_MAX for n in (a[-1], b[-1]))
    assert a[-1].endswith(".png") and "%~" in a[-1]
    # multi-byte characters are never cut in half
    c = url_path(H + "/" + "é" * 300, html=True)
    assert c[-1].endswith(".html")
    c[-1].encode("utf-8").decode("utf-8")


def test_shorten_keeps_short_names():
    assert shorten("a.html") == "a.html"


def test_names_that_differ_only_in_case_stay_different():
    assert url_path(H + "/Readme") != url_path(H + "/README")


def test_distinct_hostile_urls_stay_distinct():
    # (%63on is "con" and a%2E is "a." — the same URLs, so the same file)
    urls = [
        H + "/a%2fb",
        H + "/a/b",
        H + "/a%252fb",
        H + "/a%5cb",
        H + "/%2e%2e",
        H + "/%252e%252e",
        H + "/a?b",
        H + "/a@b",
        H + "/con",
        H + "/%25con",
        H + "/a.",
        H + "/a%252E",
    ]
    paths = [url_path(u) for u in urls]
    assert len(set(paths)) == len(paths), paths


def test_host_folder():
    assert host_folder("http://Example.ORG:8080/x") == "example.org_8080"


@pytest.mark.parametrize(
    ("name", "tag", "expected"),
    [
        ("a", "d", "a%~d"),
        ("a.html", "d", "a.html%~d"),
        ("a.html", "f", "a%~f.html"),
        ("a", "f", "a%~f"),
        ("page.htm", "1a2b3c4d", "page%~1a2b3c4d.htm"),
    ],
)
def test_conflict_name(name, tag, expected):
    assert conflict_name(name, tag) == expected


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        (("h", "index.html"), ("h", "a.html"), "a.html"),
        (("h", "a", "b.html"), ("h", "c", "d.png"), "../c/d.png"),
        (("h", "a", "b.html"), ("h", "a", "b.html"), "b.html"),
        (("h", "index.html"), ("h", "a", "b", "c.css"), "a/b/c.css"),
        (("h", "a", "x.html"), ("g_81", "y.css"), "../../g_81/y.css"),
        # file names are percent-encoded in the href, so the browser opens them
        (("h", "x.html"), ("h", "p@q=1&r=%25.html"), "p@q=1%26r=%2525.html"),
        (("h", "x.html"), ("h", "a b#c?.png"), "a%20b%23c%3F.png"),
        (("h", "x.html"), ("h", "it's(1).png"), "it%27s%281%29.png"),
        (("h", "x.html"), ("h", "café.png"), "caf%C3%A9.png"),
    ],
)
def test_relative_href(source, target, expected):
    assert relative_href(source, target) == expected


def test_a_segment_is_escaped_as_quote_escapes_it_cached_or_not():
    # a name with nothing to escape skips the cache (str.strip of what quote
    # keeps): every character alone, and with a plain name around it, must
    # come out as quote writes it
    chars = [chr(c) for c in range(1, 128)] + ["é", "\u00a0", "\U0001f600", ""]
    for ch in chars:
        for segment in (ch, f"a{ch}b.html", f"{ch}{ch}"):
            assert _href_segment(segment) == quote(segment, safe=_HREF_SAFE), segment


def test_plain_urls_take_the_short_way_to_the_same_segments():
    """``url_path`` takes a plain http(s) URL's host and segments as they
    are (``_PLAIN_URL``): the same segments as the whole decoding and
    escaping (``_url_path``) for every URL, plain or not, that a page can
    make up from these pieces."""
    rng = random.Random(17)
    pieces = "abcAZ09-._~!$&'()+,;=%/?#@:[] \t\nCONnulcom1é\x00\\*"
    bases = [
        "http://h", "https://H.example:443", "http://h:80", "http://127.0.0.1:8080",
        "HTTP://h", "ftp://x", "http://[::1]:8", "http://u@h", "http://h_1", "",
        "http:/h", "http://h?x", " http://h", "https://a.test/con", "http://a/lpt1.",
    ]  # fmt: skip
    plain = 0
    for _ in range(20000):
        tail = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        if rng.random() < 0.5:
            tail = "/" + tail
        if rng.random() < 0.05:
            tail = (
                "/" + "a" * rng.randint(250, 260) + rng.choice(["", ".html", ".", "/"])
            )
        url = rng.choice(bases) + tail
        plain += _PLAIN_URL.fullmatch(url) is not None
        for html in (False, True):
            try:
                want: object = _url_path(url, html)
            except ValueError as exc:  # urlsplit's (a bracket in the host)
                want = exc.args
            try:
                got: object = url_path.__wrapped__(url, html)
            except ValueError as exc:
                got = exc.args
            assert got == want, (url, html)
    assert plain > 1000  # the short way was taken, and compared
