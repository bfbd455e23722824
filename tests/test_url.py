import pytest

from webspider.utils.url import (
    BadURLError,
    canonical_url,
    host_of,
    normalize_seed,
    origin_of,
    url_scheme,
)


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://example.org/a#frag", "http://example.org/a"),
        ("HTTP://Example.ORG/A", "http://example.org/A"),
        ("http://example.org:80/", "http://example.org/"),
        ("https://example.org:443/x", "https://example.org/x"),
        ("http://example.org:8080/x", "http://example.org:8080/x"),
        ("https://example.org:80/x", "https://example.org:80/x"),
        ("http://example.org", "http://example.org/"),
        ("http://example.org/%7euser", "http://example.org/~user"),
        ("http://example.org/a%2fb", "http://example.org/a%2Fb"),
        ("http://example.org/a b", "http://example.org/a%20b"),
        ("http://example.org/?b=2&a=1", "http://example.org/?a=1&b=2"),
        ("http://bücher.ch/ä", "http://xn--bcher-kva.ch/%C3%A4"),
        ("http://user@example.org:80/", "http://user@example.org/"),
        ("http://[::1]:80/", "http://[::1]/"),
    ],
)
def test_canonical_url(url, canonical):
    assert canonical_url(url) == canonical


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("http://example.org/", "http://example.org/"),
        ("https://example.org", "https://example.org/"),
        ("example.org", "https://example.org/"),
        ("example.org/docs/", "https://example.org/docs/"),
        ("localhost:8000/x", "https://localhost:8000/x"),
        ("127.0.0.1:8000", "https://127.0.0.1:8000/"),
        ("  http://example.org/a  ", "http://example.org/a"),
        ("HTTP://Example.org/", "http://example.org/"),
    ],
)
def test_normalize_seed_accepts(value, url):
    assert normalize_seed(value) == url


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("htp:/x", "scheme 'htp' is not supported"),
        ("http://", "has no host"),
        ("http:/x", "expected http://HOST/"),
        ("http://exa mple.org/", "white space"),
        ("ftp://example.org/", "scheme 'ftp' is not supported"),
        ("javascript:alert(1)", "scheme 'javascript'"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("http://example.org:99999/", "Port out of range"),
        ("http://bad_host!/", "bad host name"),
        ("", "empty"),
    ],
)
def test_normalize_seed_rejects(value, message):
    with pytest.raises(BadURLError) as info:
        normalize_seed(value)
    assert message in str(info.value)
    if value:
        assert repr(value) in str(info.value)


def test_small_helpers():
    assert url_scheme("HTTPS://x") == "https"
    assert url_scheme("/relative") == ""
    assert host_of("http://Example.ORG:81/x") == "example.org"
    assert host_of("http://[::1/") == ""
    assert origin_of("https://a.org/x") == ("https", "a.org", 443)
    assert origin_of("http://a.org:8080/") == ("http", "a.org", 8080)
