"""The crawl's side of the page worker (webspider.pageworker.client): what
it accepts of the worker's answers."""

import hashlib

import pytest

from webspider.mirror.entry import Entry
from webspider.mirror.paths import url_path
from webspider.pageworker.client import record_mismatch

URL = "http://site.test/dir/page.html"
ENTRY = Entry(
    url=URL,
    path=url_path(URL),
    hash=hashlib.sha256(b"page").hexdigest(),
    size=4,
    content_type="text/html",
    kind="html",
    encoding="utf-8",
    run=2,
)
RECORD = ENTRY.index_json()


def test_the_record_the_crawl_would_make_is_taken():
    assert record_mismatch(RECORD, ENTRY) is None
    moved = Entry(**{**ENTRY.__dict__, "path": ("other", "page.html")})
    assert record_mismatch(moved.index_json(), moved) is None


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({"s": 4}, "is not an index record"),
        (RECORD[:1], "is not an index record"),
        ([*RECORD, *[None] * 12], "is not an index record"),
        ([RECORD[0], 5, *RECORD[2:]], "does not match the page"),
        ([RECORD[0], 4, 1, *RECORD[3:]], "does not match the page"),
        ([1, *RECORD[1:]], "does not match the page"),
    ],
)
def test_a_record_that_does_not_match_the_page_is_refused(record, why):
    assert record_mismatch(record, ENTRY) == why
