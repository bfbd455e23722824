import random
from urllib.parse import urlsplit

import pytest
from w3lib.url import safe_url_string

from webspider.utils import url as url_module
from webspider.utils.url import (
    BadURLError,
    ascii_host,
    canonical_url,
    host_of,
    mask_password,
    normalize_seed,
    origin_of,
    split_userinfo,
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
    ("url", "plain"),
    [
        ("http://example.org/a/b.html", True),
        ("https://127.0.0.1:8000/_static/x-y_z~(1).css", True),
        ("http://a-b.example.org:65535/p:q@r!$&'()*+,=", True),
        ("http://example.org/a/../b", False),  # dot segments
        ("http://example.org/./b", False),
        ("http://example.org/a?x=1", False),  # query sorted
        ("http://example.org/a;p", False),  # params
        ("http://example.org/%41", False),  # percent-encoding normalised
        ("http://Example.org/", False),  # host lower-cased
        ("http://xn--bcher-kva.ch/", False),  # IDNA
        ("http://example.123/", False),  # ends in a number: IPv4 parsing
        ("http://127.1/", False),
        ("http://256.0.0.1/", False),
        ("http://example.org:80/", False),  # default port dropped
        ("https://example.org:443/", False),
        ("http://example.org:65536/", False),  # invalid port
        ("http://example.org", False),  # path added
    ],
)
def test_plain_urls_are_their_own_canonical_form(url, plain):
    assert url_module._is_plain(url) is plain
    if plain:
        assert url_module._slow_canonical_url(url) == url


def test_plain_fast_path_agrees_with_w3lib_on_random_urls():
    rnd = random.Random(8)
    labels = ["a", "b1", "-", "a-", "x", "0", "1", "255", "256", "9a", "0x1", "ab"]
    chars = [*"aZ09_~!$&'()*+,=:@/.-%?#;é ", "..", "//"]
    ports = ["", ":1", ":8080", ":65535", ":65536", ":80", ":443"]
    fast = 0
    for _ in range(3000):
        host = ".".join(rnd.choice(labels) for _ in range(rnd.randint(1, 4)))
        path = "".join(rnd.choice(chars) for _ in range(rnd.randint(0, 10)))
        url = f"{rnd.choice(['http', 'https'])}://{host}{rnd.choice(ports)}/{path}"
        if url_module._is_plain(url):
            fast += 1
            assert url_module._slow_canonical_url(url) == url, url
    assert fast > 300


def test_query_fast_path_agrees_with_w3lib_on_random_urls():
    rnd = random.Random(9)
    chars = [*"aZ09_~!$'()*+,=:;@/.-%?&# é", "==", "&&"]
    fast = 0
    for _ in range(5000):
        query = "".join(rnd.choice(chars) for _ in range(rnd.randint(0, 12)))
        url = f"http://example.org/p?{query}"
        canonical = url_module.canonical_url.__wrapped__(url)
        assert canonical == url_module._slow_canonical_url(url), url
        fast += url_module._QUERY_RE.fullmatch(query) is not None
    assert fast > 500
    assert (
        url_module.canonical_url("https://bugs.python.org/issue?@action=r&bpo=4")
        == "https://bugs.python.org/issue?%40action=r&bpo=4"
    )


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://x.org/p?sessionid=0f3a&a=1", "http://x.org/p?a=1"),
        ("http://x.org/p?a=1&JSESSIONID=A1B2", "http://x.org/p?a=1"),
        ("http://x.org/p?PHPSESSID=abc", "http://x.org/p"),
        ("http://x.org/p?session_id=1&sessid=2&b=2", "http://x.org/p?b=2"),
        ("http://x.org/p?CFID=12&CFTOKEN=34&x=", "http://x.org/p?x="),
        ("http://x.org/p?osCsid=q&zenid=r", "http://x.org/p"),
        ("http://x.org/cart;jsessionid=A1B2C3", "http://x.org/cart"),
        ("http://x.org/cart;JSESSIONID=A1B2C3?item=4", "http://x.org/cart?item=4"),
        ("http://x.org/a%20b?jsessionid=1&b=2", "http://x.org/a%20b?b=2"),
        # sid only when its value is a token: ?sid=3 may name a page
        ("http://x.org/p?sid=3", "http://x.org/p?sid=3"),
        ("http://x.org/p?sid=0123456789abcdef0123&a=1", "http://x.org/p?a=1"),
        # only whole names
        ("http://x.org/p?mysessionid=1", "http://x.org/p?mysessionid=1"),
        ("http://x.org/p?sessionids=1", "http://x.org/p?sessionids=1"),
        ("http://x.org/p;x=1", "http://x.org/p;x=1"),
    ],
)
def test_session_parameters_are_not_part_of_the_canonical_url(url, canonical):
    assert canonical_url.__wrapped__(url) == canonical


def test_session_fast_path_agrees_with_the_slow_one():
    rnd = random.Random(10)
    fields = ["a=1", "b=", "jsessionid=Q1", "SID=0123456789abcdef0", "sid=4"]
    fields += ["PHPSESSID=x", "cfid=3", "x=é", "sessionid=", "&", "c=%41"]
    for _ in range(2000):
        query = "&".join(rnd.choice(fields) for _ in range(rnd.randint(1, 4)))
        url = f"http://example.org/p?{query}"
        canonical = url_module.canonical_url.__wrapped__(url)
        assert canonical == url_module._slow_canonical_url(url), url
        assert url_module._SESSION_RE.search(canonical) is None, url


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
        ("http://alice:pw@example.org", "http://alice:pw@example.org/"),
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


def test_a_bad_start_urls_password_is_not_repeated():
    with pytest.raises(BadURLError) as info:
        normalize_seed("http://alice:s3cret@example.org:99999/")
    assert "s3cret" not in str(info.value)
    assert "'http://alice:***@example.org:99999/'" in str(info.value)


@pytest.mark.parametrize(
    ("url", "masked", "split"),
    [
        (
            "http://alice:s3cret@x.org:8080/a?b=c@d",
            "http://alice:***@x.org:8080/a?b=c@d",
            ("http://x.org:8080/a?b=c@d", "alice", "s3cret"),
        ),
        (
            "https://al%20ice:p%40ss%3Aw@x.org/",
            "https://al%20ice:***@x.org/",
            ("https://x.org/", "al ice", "p@ss:w"),
        ),
        ("http://bob@x.org/", "http://bob@x.org/", ("http://x.org/", "bob", "")),
        (
            "http://x.org:8080/a@b",
            "http://x.org:8080/a@b",
            ("http://x.org:8080/a@b", None, ""),
        ),
        ("http://x.org/", "http://x.org/", ("http://x.org/", None, "")),
        ("alice:pw@x.org/", "alice:***@x.org/", None),
    ],
)
def test_user_and_password_in_urls(url, masked, split):
    assert mask_password(url) == masked
    if split is not None:
        assert split_userinfo(url) == split


def test_small_helpers():
    assert url_scheme("HTTPS://x") == "https"
    assert url_scheme("/relative") == ""
    assert host_of("http://Example.ORG:81/x") == "example.org"
    assert host_of("http://[::1/") == ""
    # the head of the URL is all that is split: the same answer as splitting it all
    for url in [
        "http://Example.ORG:81/x?y#z",
        "https://u:p@[::1]:8/a",
        "http://h\tx.org/p",
        "HTTP://H/",
        "mailto:a@b",
        "//h/x",
        " http://h/",
        "http://h#f",
        "http://[bad",
        "x:/y",
    ]:
        try:
            expected = urlsplit(url).hostname or ""
        except ValueError:
            expected = ""
        assert host_of(url) == expected, url
    assert origin_of("https://a.org/x") == ("https", "a.org", 443)
    assert origin_of("http://a.org:8080/") == ("http", "a.org", 8080)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("bücher.test", "xn--bcher-kva.test"),
        ("BÜCHER.Test", "xn--bcher-kva.test"),
        ("XN--BCHER-KVA.test", "xn--bcher-kva.test"),
        ("пример.рф", "xn--e1afmkfd.xn--p1ai"),
        ("straße.de", "strasse.de"),  # IDNA 2003, as w3lib and so Scrapy
        ("\uff42ücher.test", "xn--bcher-kva.test"),  # NFKC first: fullwidth b
        ("bücher.test.", "xn--bcher-kva.test."),
        ("example.org", "example.org"),
        ("127.0.0.1", "127.0.0.1"),
        ("x" * 64 + "ü.test", "x" * 64 + "ü.test"),  # refused: kept, as w3lib
    ],
)
def test_ascii_host_is_the_host_requests_carry(host, expected):
    assert ascii_host(host) == expected
    # what Scrapy's Request(url) sends (w3lib's safe_url_string)
    assert urlsplit(safe_url_string(f"http://{host}/")).hostname == expected


def test_a_host_and_its_punycode_are_one_host():
    for url in [
        "http://bücher.test/a",
        "http://BÜCHER.TEST:80/a",
        "http://xn--bcher-kva.test/a",
    ]:
        assert host_of(url) == "xn--bcher-kva.test"
        assert origin_of(url) == ("http", "xn--bcher-kva.test", 80)
        assert canonical_url(url) == "http://xn--bcher-kva.test/a"


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        ("http://example.org/a/b.html", True),
        ("https://127.0.0.1:8000/_static/x-y_z~(1).css?v=2&w=%41#top", True),
        ("http://a-b.example.org:65535/p:q@r!$&'()*+,;=%zz/../.%2e", True),
        ("http://xn--bcher-kva.ch/a#x?y'z", True),
        ("http://example.org:80/", True),  # the port is kept
        ("http://Example.org/", False),  # host lower-cased
        ("http://bücher.ch/", False),  # IDNA
        ("http://[::1]/", False),
        ("http://example.org", False),  # no path
        ("http://example.org/a?", False),  # an empty query is dropped
        ("http://example.org/a#", False),  # an empty fragment too
        ("http://example.org/?a='b'", False),  # "'" quoted in a query
        ("http://example.org/#a#b", False),  # a second "#" quoted
        ("http://example.org/a b", False),
        ("http://example.org/a|b", False),
        ("http://example.org:08/", False),  # leading zero dropped
        ("http://example.org:65536/", False),  # out of range: an error
        ("http://u:p@example.org/", False),  # userinfo quoted
        ("HTTP://example.org/", False),  # scheme lower-cased
        ("ftp://example.org/", False),
    ],
)
def test_safe_urls_are_their_own_safe_url_string(url, safe):
    assert url_module.is_safe_url(url) is safe
    if safe:
        assert safe_url_string(url) == url


def test_is_safe_url_agrees_with_w3lib_on_random_urls():
    # the Requests built from stored URLs and from links skip Scrapy's
    # quoting when is_safe_url says so: it must never say so wrongly
    rnd = random.Random(17)
    labels = ["a", "b1", "0", "1", "255", "256", "xn--bcher-kva", "xn--zz", "xn--"]
    labels += ["a-", "-", "0x7f", "010", "4294967296", "A", "é", "", "a" * 64]
    chars = [*"aZ09_~!$&'()*+,=:;@/.-%?#", "%2e", "%2E", "..", "//", "%41", "%zz"]
    chars += ["./", "../", "/./", "/../", "?", "#", "é", " ", "|", "\\", "^", "[]"]
    ports = ["", ":", ":1", ":08", ":8080", ":65535", ":65536", ":80", ":443", ":0"]
    fast = 0
    for _ in range(40000):
        host = ".".join(rnd.choice(labels) for _ in range(rnd.randint(1, 4)))
        pool = chars[:36] if rnd.random() < 0.7 else chars  # mostly safe ones
        rest = "".join(rnd.choice(pool) for _ in range(rnd.randint(0, 14)))
        scheme = rnd.choice(["http", "https", "HTTP"])
        url = f"{scheme}://{host}{rnd.choice(ports)}{rnd.choice(['/', '', '?'])}{rest}"
        if url_module.is_safe_url(url):
            fast += 1
            assert safe_url_string(url) == url, url
    assert fast > 2000
