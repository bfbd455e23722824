from __future__ import annotations

import json

from webspider.frontier.pages import PagesFile


def test_lines_like_scrapys_jsonlines_feed(tmp_path):
    pages = PagesFile(tmp_path / "pages.jsonl")
    line = pages.line({"url": "http://a.test/é", "depth": 1})
    assert line == '{"url": "http://a.test/é", "depth": 1}\n'.encode()
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
