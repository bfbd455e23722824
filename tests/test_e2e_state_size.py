"""End-to-end: what the crawl state keeps on disk, with the mirror on.

A site of many small pages linking far ahead (so that most links lead to
files not mirrored yet: kept links, pending fix-ups, restore maps), crawled
in two runs of the same command: one stopped by a page limit (its state
holds the mirror's index, to be continued), then the rest, to the end."""

from __future__ import annotations

import json
import random
import sqlite3

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html
from webspider.frontier.packedlists import MARK, unpack

pytestmark = pytest.mark.e2e

PAGES = 400
LINKS = 20
#: in the form servers send (the index keeps it as a number)
LAST_MODIFIED = "Tue, 01 Dec 2026 21:52:45 GMT"


def dated(body):
    """A route that answers 304 when the client has the page already."""

    def route(seen):
        if seen.headers.get("If-Modified-Since") == LAST_MODIFIED:
            return Page(b"", status=304, content_type=None)
        return Page(body, headers=[("Last-Modified", LAST_MODIFIED)])

    return route


def site(server):
    rng = random.Random(14)
    for i in range(PAGES):
        targets = {(i + 1) % PAGES, *rng.sample(range(PAGES), LINKS - 1)}
        # the three ways sites write a link: page-relative, root-relative,
        # absolute
        links = "".join(
            f'<a href="{form}">page {t}</a>'
            for n, t in enumerate(sorted(targets))
            for form in (
                (f"{t}.html", f"/p/{t}.html", server.url(f"/p/{t}.html"))[n % 3],
            )
        )
        server.add(f"/p/{i}.html", dated(html(links, title=f"P{i}")))
    server.add("/", html('<a href="/p/0.html">start</a>'))


def records(path, namespace):
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT substr(r.key, 2), r.value FROM record r JOIN namespace n"
            " ON unicode(r.key) = n.id WHERE n.name = ?",
            (namespace,),
        ).fetchall()
    finally:
        db.close()


def decoded(value):
    """A record's value as stored: a packed list (format 7), or JSON."""
    if isinstance(value, bytes) and value[:1] == bytes([MARK]):
        return unpack(value)
    return json.loads(value)


@deferred_f_from_coro_f
async def test_state_on_disk_stays_small(tmp_path, server):
    site(server)
    state = tmp_path / "out" / ".webspider-state.sqlite3"
    first = await crawl(
        tmp_path,
        settings={"CLOSESPIDER_PAGECOUNT": 150},
        start_urls=server.url("/"),
    )
    assert first.stats["finish_reason"] == "closespider_pagecount"
    # the unfinished crawl's index: compact records, no restore entry that
    # only repeats what its link says
    index = records(state, "mirror.index")
    assert len(index) >= 100
    values = [decoded(value) for _, value in index]
    # fields by position (no names), the links' packed restore map 11th;
    # packed in bytes, but for the records with a restore map (JSON)
    assert all(isinstance(v, list) for v in values)
    packed = [v for _, v in index if isinstance(v, bytes)]
    assert len(packed) >= len(index) // 2
    same = [v[10] for v in values if len(v) > 10 and v[10]]
    assert not any(s.startswith("=") or "\n=" in s for s in same)
    average = sum(len(value) for _, value in index) / len(index)
    # the long form took about 400 here, the object form an earlier
    # version wrote about 150
    assert average < 120, average

    second = await crawl(tmp_path, start_urls=server.url("/"))
    assert second.stats["finish_reason"] == "finished"
    pages = [line["url"] for line in first.exported()]
    assert len(pages) == len(set(pages)) == PAGES + 1
    # the finished state: its metadata alone, no free pages, no log left
    assert records(state, "mirror.index") == []
    db = sqlite3.connect(state)
    try:
        assert db.execute("PRAGMA freelist_count").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM url").fetchone() == (0,)
        assert db.execute("SELECT value FROM meta WHERE name = 'finished'").fetchone()
    finally:
        db.close()
    assert not state.with_name(state.name + "-wal").exists()
    # about 2,000 bytes per URL once, then the queue's rows (~55 a URL);
    # now the file's empty tables and the metadata, whatever the size
    assert state.stat().st_size < 64 * 1024
    # the next run is an update crawl: it asks with the validators the
    # export kept, the state being fresh
    server.clear()
    third = await crawl(tmp_path, start_urls=server.url("/"))
    assert third.stats["finish_reason"] == "finished"
    asked = {
        seen.path: seen.headers.get("If-Modified-Since")
        for seen in server.log
        if seen.path.startswith("/p/")
    }
    assert len(asked) == PAGES
    assert set(asked.values()) == {LAST_MODIFIED}
    assert third.stats["webspider/mirror/not_modified_count"] == PAGES
