from __future__ import annotations

import io
import json
from dataclasses import dataclass

import pytest
from scrapy.exporters import JsonLinesItemExporter

from webspider.frontier.pages import PagesFile
from webspider.items import PageItem

#: PageItems with every kind of value a field can hold
ITEMS = [
    PageItem(url="http://a.test/"),
    PageItem(
        url='http://a.test/é?q=\u2028&x="y"',
        redirects=["http://a.test/r1", "http://a.test/ü"],
        status=203,
        depth=3,
        round=2,
        referer="http://a.test/ref",
        content_type="text/html",
        size=1234,
        content_hash="ab" * 32,
        duplicate_of="http://a.test/first",
        title="Tïtle \U0001f600 <b>&amp;\t\n\x00",
        links=42,
        path="a.test/é/index.html",
        fetched_at="2026-12-01T21:52:36+00:00",
        noindex=True,
    ),
]


def test_lines_like_scrapys_jsonlines_feed(tmp_path):
    pages = PagesFile(tmp_path / "pages.jsonl")
    line = pages.line({"url": "http://a.test/é", "depth": 1})
    assert line == '{"url": "http://a.test/é", "depth": 1}\n'.encode()
    pages.close()


def exporter_line(item, encoding):
    buffer = io.BytesIO()
    JsonLinesItemExporter(buffer, encoding=encoding).export_item(item)
    return buffer.getvalue()


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", "ascii", "utf-16"])
@pytest.mark.parametrize("item", ITEMS)
def test_page_items_are_the_exporters_bytes(tmp_path, item, encoding):
    """PageItems are encoded without the exporter: the bytes must not move."""
    pages = PagesFile(tmp_path / "pages.jsonl", encoding=encoding)
    try:
        expected = exporter_line(item, encoding)
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            pages.line(item)
    else:
        assert pages.line(item) == expected
    pages.close()


def test_page_item_line_pinned(tmp_path):
    pages = PagesFile(tmp_path / "pages.jsonl")
    assert pages.line(ITEMS[0]) == (
        b'{"url": "http://a.test/", "redirects": [], "status": 200, "depth": 0, '
        b'"round": 0, "referer": null, "content_type": null, "size": 0, '
        b'"content_hash": "", "duplicate_of": null, "title": null, "links": 0, '
        b'"path": null, "fetched_at": "", "noindex": false}\n'
    )
    pages.close()


def test_other_items_go_through_the_exporter(tmp_path):
    @dataclass
    class Other(PageItem):
        extra: str = "x"

    pages = PagesFile(tmp_path / "pages.jsonl")
    for item in (Other(url="http://a.test/"), {"b": 1, "a": [1]}):
        assert pages.line(item) == exporter_line(item, "utf-8")
    assert pages.line(Other(url="u")).endswith(b'"extra": "x"}\n')
    pages.close()


def test_resume_cuts_back_to_the_committed_offset(tmp_path):
    path = tmp_path / "pages.jsonl"
    pages = PagesFile(path)
    pages.write([pages.line({"n": 1}), pages.line({"n": 2})])
    committed = pages.sync()
    pages.write([pages.line({"n": 3})])
    pages.close()
    with path.open("ab") as fh:
        fh.write(b'{"n": 4, "half')  # a kill in the middle of a line
    pages = PagesFile(path, committed)
    pages.write([pages.line({"n": 3})])
    pages.close()
    assert [json.loads(x)["n"] for x in path.read_text().splitlines()] == [1, 2, 3]


def test_a_new_crawl_replaces_the_file(tmp_path):
    path = tmp_path / "pages.jsonl"
    path.write_text('{"old": 1}\n')
    PagesFile(path).close()
    assert path.read_bytes() == b""


def test_a_started_sync_covers_what_is_written_until_sync(tmp_path):
    # start_sync fsyncs in a thread while the commit's other work runs;
    # sync's length is then what the file holds, lines written between included
    path = tmp_path / "pages.jsonl"
    pages = PagesFile(path)
    pages.write([pages.line({"n": 1})])
    pages.start_sync()
    pages.start_sync()  # one at a time: the second does nothing
    first = path.stat().st_size
    pages.write([pages.line({"n": 2})])
    length = pages.sync()
    assert first == len(b'{"n": 1}\n')
    assert length == path.stat().st_size == first + len(b'{"n": 2}\n')
    pages.start_sync()
    pages.close()  # waits for it, and the thread is gone
    assert pages._fsync is None
    assert [json.loads(x)["n"] for x in path.read_text().splitlines()] == [1, 2]
