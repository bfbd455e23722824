import pytest
from protego import Protego

from webspider.politeness.robots import (
    ALLOW_ALL,
    PARSE,
    REDIRECT,
    UNREACHABLE,
    backoff,
    drop_partial_token_groups,
    outcome_of_status,
    product_token,
    robots_text,
)


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, PARSE),
        (204, PARSE),
        (301, REDIRECT),
        (308, REDIRECT),
        (400, ALLOW_ALL),
        (401, ALLOW_ALL),
        (403, ALLOW_ALL),
        (404, ALLOW_ALL),
        (410, ALLOW_ALL),
        (429, UNREACHABLE),
        (500, UNREACHABLE),
        (503, UNREACHABLE),
        (599, UNREACHABLE),
        (100, UNREACHABLE),
    ],
)
def test_outcome_of_status(status, outcome):
    assert outcome_of_status(status) == outcome


@pytest.mark.parametrize(
    ("body", "max_bytes", "text", "truncated"),
    [
        (b"User-agent: *\nDisallow: /a\n", 100, "User-agent: *\nDisallow: /a\n", False),
        (b"\xef\xbb\xbfUser-agent: *\n", 100, "User-agent: *\n", False),
        (b"a\r\nb\r\n", 100, "a\nb\n", False),
        (b"a\rb\r", 100, "a\nb\n", False),
        # cut at the last whole line within the limit
        (b"Disallow: /a\nDisallow: /bcdef\n", 20, "Disallow: /a\n", True),
        (b"Disallow: /abcdefghij", 5, "", True),
        (b"caf\xc3\xa9\n\xff\n", 100, "caf\u00e9\n\ufffd\n", False),
    ],
)
def test_robots_text(body, max_bytes, text, truncated):
    assert robots_text(body, max_bytes) == (text, truncated)


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("webspider/0.1.0 (+https://github.com/webspider/webspider)", "webspider"),
        ("WebSpider", "webspider"),
        ("Mozilla/5.0 (compatible)", "mozilla"),
        ("", "*"),
    ],
)
def test_product_token(user_agent, token):
    assert product_token(user_agent) == token


def test_backoff_doubles_up_to_a_maximum():
    assert [backoff(i, 5) for i in range(4)] == [5, 10, 20, 40]
    assert backoff(30, 5, maximum=60) == 60


@pytest.mark.parametrize(
    ("robots", "forbidden"),
    [
        ("User-agent: *\nDisallow: /star\n", "/star"),
        (
            "User-agent: webspider\nDisallow: /own\n\nUser-agent: *\nDisallow: /star",
            "/own",
        ),
        (
            "User-agent: WEBSPIDER\nDisallow: /own\n\nUser-agent: *\nDisallow: /star",
            "/own",
        ),
        # a group for a prefix of the token is not ours
        ("User-agent: web\nDisallow: /web\n\nUser-agent: *\nDisallow: /star", "/star"),
        ("User-agent: spider\nDisallow: /s\n\nUser-agent: *\nDisallow: /star", "/star"),
        (
            "User-agent: webspider-pro\nDisallow: /pro\n\n"
            "User-agent: *\nDisallow: /star",
            "/star",
        ),
    ],
)
def test_group_choice(robots, forbidden):
    parser = Protego.parse(robots)
    drop_partial_token_groups(parser, "webspider")
    paths = ["/own", "/star", "/web", "/s", "/pro"]
    blocked = [
        p for p in paths if not parser.can_fetch("http://x.org" + p, "webspider")
    ]
    assert blocked == [forbidden]
