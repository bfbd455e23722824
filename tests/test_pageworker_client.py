"""The crawl's side of the page worker (webspider.pageworker.client): what
it accepts of the worker's answers."""

import hashlib

import pytest

from webspider.mirror.entry import Entry
from webspider.mirror.paths import url_path
from webspider.pageworker.client import record_mismatch

URL = "http://site.test/dir/page.html"
PLAIN = "/".join(url_path(URL))
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
ELSEWHERE = ("other", "page.html")


def test_the_record_the_crawl_would_make_is_taken():
    assert record_mismatch(RECORD, ENTRY, list(url_path(URL)), PLAIN) is None
    moved = Entry(**{**ENTRY.__dict__, "path": ELSEWHERE})
    assert record_mismatch(moved.index_json(), moved, ELSEWHERE, PLAIN) is None


@pytest.mark.parametrize(
    ("record", "used", "plain", "why"),
    [
        ({"s": 4}, url_path(URL), PLAIN, "is not an index record"),
        (RECORD[:1], url_path(URL), PLAIN, "is not an index record"),
        ([*RECORD, *[None] * 12], url_path(URL), PLAIN, "is not an index record"),
        ([RECORD[0], 5, *RECORD[2:]], url_path(URL), PLAIN, "does not match the page"),
        ([RECORD[0], 4, 1, *RECORD[3:]], url_path(URL), PLAIN, "does not match"),
        ([1, *RECORD[1:]], url_path(URL), PLAIN, "does not match the page"),
        (RECORD, url_path(URL), None, "does not match the page"),
        (RECORD, "site.test/dir/page.html", PLAIN, "does not match the page"),
        # written elsewhere, but the record says url_path's place
        (RECORD, ELSEWHERE, PLAIN, "does not say where its file is"),
    ],
)
def test_a_record_that_does_not_match_the_page_is_refused(record, used, plain, why):
    found = record_mismatch(record, ENTRY, used, plain)
    assert found is not None and found.startswith(why)
