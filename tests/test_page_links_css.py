"""Links of stylesheets (webspider.page.links.extract_css, by the scan's CSS
reader, webspider.page.scan)."""

import pytest

from webspider.page.links import extract_css

BASE = "http://site.test/css/"


def css_urls(css: str) -> list[str]:
    page = extract_css(css.encode(), BASE + "s.css", "utf-8")
    return [link.url.removeprefix(BASE) for link in page.links]


@pytest.mark.parametrize(
    ("css", "urls"),
    [
        ("a{background:url(x.png)}", ["x.png"]),
        ("a{background:url( 'x y.png' )}", ["x y.png"]),
        ('a{background:URL("q(1).png")}', ["q(1).png"]),
        ('@import "base.css"; @import url(more.css);', ["base.css", "more.css"]),
        ("@IMPORT 'print.css' print;", ["print.css"]),
        ("/* url(commented.png) */ b{}", []),
        ("a{background:url()}", []),
        ("a{background:url(data:image/png;base64,AAA)}", []),  # not fetched
        ("a{src:url(f.woff2) format('woff2'), url(f.woff)}", ["f.woff2", "f.woff"]),
        ("a{background:url(unterminated", []),
        ("a{b:url(../img/bg.png)}", ["http://site.test/img/bg.png"]),
    ],
)
def test_css_urls(css, urls):
    assert css_urls(css) == urls


def test_an_unclosed_comment_runs_to_the_end():
    assert css_urls("a{b:url(x.png)} /* c{d:url(y.png)}") == ["x.png"]
    assert css_urls("/*" * 200_000 + "url(z.png)") == []  # and fast


def test_a_utf16_stylesheet_is_read():
    page = extract_css("a{b:url(é.png)}".encode("utf-16"), BASE + "s.css", "utf-16")
    assert [link.url for link in page.links] == [BASE + "é.png"]
