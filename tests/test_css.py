import pytest

from webspider.utils.css import css_urls


@pytest.mark.parametrize(
    ("css", "urls"),
    [
        ("a{background:url(x.png)}", ["x.png"]),
        ("a{background:url( 'x y.png' )}", ["x y.png"]),
        ('a{background:URL("q(1).png")}', ["q(1).png"]),
        ('@import "base.css"; @import url(more.css);', ["more.css", "base.css"]),
        ("@IMPORT 'print.css' print;", ["print.css"]),
        ("/* url(commented.png) */ b{}", []),
        ("a{background:url()}", []),
        ("a{background:url(data:image/png;base64,AAA)}", ["data:image/png;base64,AAA"]),
        ("a{src:url(f.woff2) format('woff2'), url(f.woff)}", ["f.woff2", "f.woff"]),
        ("a{background:url(unterminated", []),
    ],
)
def test_css_urls(css, urls):
    assert list(css_urls(css)) == urls


def test_an_unclosed_comment_runs_to_the_end():
    assert list(css_urls("a{b:url(x.png)} /* c{d:url(y.png)}")) == ["x.png"]
    assert list(css_urls("/*" * 200_000 + "url(z.png)")) == []  # and fast
