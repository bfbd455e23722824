import pytest

from webspider.politeness.robots import (
    ALLOW_ALL,
    PARSE,
    REDIRECT,
    UNREACHABLE,
    backoff,
    outcome_of_status,
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
        # what is left of a byte order mark cut short is dropped too
        (b"\xef\xbbUser-agent: *\n", 100, "User-agent: *\n", False),
        (b"\xefUser-agent: *\n", 100, "User-agent: *\n", False),
        # not a byte order mark: the first line stays garbage (as in Google's)
        (b"\xef\x11\xbfUser-agent: *\n", 100, "\x11\ufffdUser-agent: *\n", False),
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


def test_backoff_doubles_up_to_a_maximum():
    assert [backoff(i, 5) for i in range(4)] == [5, 10, 20, 40]
    assert backoff(30, 5, maximum=60) == 60
