import re

import pytest

from webspider.reports.fingerprint import normalize_html, normalized_hash


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("<p>x</p>\n\n<p>y</p>", "<p>x</p><p>y</p>"),
        ("<p>a   b</p>", "<p>a b</p>"),
        ("<p>x</p><!-- built 12 --><!--\nmulti\n-->", "<p>x</p>"),
        ("<p>Generated 2024-05-01T12:30:00Z</p>", "<p>Generated 2023-01-01 08:00</p>"),
        ("<p>at 12:30:59</p>", "<p>at 09:01:02</p>"),
        (
            "<p>Wed, 01 May 2024 12:30:00 GMT</p>",
            "<p>Thu, 02 May 2024 13:00:00 GMT</p>",
        ),
    ],
)
def test_markup_noise_is_ignored(a, b):
    assert normalize_html(a) == normalize_html(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("<p>x</p>", "<p>y</p>"),
        ("<p>2024-05-01</p>", "<p>2024-05-02</p>"),  # a date alone is content
        ("<p>a b</p>", "<p>ab</p>"),
    ],
)
def test_content_differences_are_kept(a, b):
    assert normalize_html(a) != normalize_html(b)


def test_user_patterns():
    token = [re.compile(r'name="csrf" value="[^"]*"')]
    a = '<input name="csrf" value="abc">'
    b = '<input name="csrf" value="xyz">'
    assert normalized_hash(a) != normalized_hash(b)
    assert normalized_hash(a, token) == normalized_hash(b, token)
