"""End-to-end: a hostile site tries to make the mirror write outside its
folder, through a symlink, over the crawl's own files, or to lose files."""

from html import escape

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import Page, html

pytestmark = pytest.mark.e2e

LONG = "L" * 300
HOSTILE_LINKS = [
    "../../../../evil1",
    "/a/%2e%2e/%2e%2e/%2e%2e/evil2",
    "/%252e%252e/%252e%252e/evil3",
    "/x%2f..%2f..%2f..%2fevil4",
    "/x%5c..%5c..%5c..%5cevil5",
    "/x\\..\\..\\..\\evil6",
    "/%c0%ae%c0%ae/%c0%ae%c0%ae/evil9",
    "/q?x=/../../evil8",
    "/cd",  # Content-Disposition: ../../evil7.sh
    "/nul%00byte",
    "/ctl%0a%0d%1bname",
    "/con",
    "/aux.txt",
    "/trail.",
    "/trail%20",
    f"/{LONG}1",
    f"/{LONG}2",
    "/case",
    "/CASE",
    "/f",  # a file…
    "/f/g",  # …and a folder of the same name
]


def hostile_site(server):
    links = " ".join(f'<a href="{escape(link)}">x</a>' for link in HOSTILE_LINKS)

    def answer(seen):
        if seen.path == "/robots.txt":
            return Page(b"", status=404)
        if seen.path == "/":
            return Page(html(links))
        headers = []
        if seen.path == "/cd":
            headers = [("Content-Disposition", 'attachment; filename="../../evil7.sh"')]
        return Page(f"served {seen.path}", content_type="text/plain", headers=headers)

    server.answer = answer


def all_files(path):
    return {p for p in path.rglob("*") if p.is_file() or p.is_symlink()}


@deferred_f_from_coro_f
async def test_hostile_urls_stay_inside_the_mirror(tmp_path, server):
    hostile_site(server)
    result = await crawl(tmp_path, start_urls=server.url("/"))
    out = result.output
    mirror = (out / "mirror").resolve()
    for path in all_files(tmp_path):
        # the crawl's own output files (pages.jsonl, reports…), or the mirror
        assert path.parent == out or mirror in path.resolve().parents, path
    # (the URLs resolve to e.g. /evil1 on the site: inside the mirror is fine)
    outside = [p for p in tmp_path.parent.rglob("*evil*") if mirror not in p.parents]
    assert outside == []
    # every response is in the mirror, each in its own file, whole
    items = [i for i in result.items if i["url"] != server.url("/")]
    assert len(items) == len(server.requested_pages()) - 1
    paths = [i["path"] for i in items]
    assert None not in paths
    assert len(set(paths)) == len(paths)
    served = {f"served {r.path}".encode() for r in server.log}
    for item in items:
        file = mirror / item["path"]
        assert not file.is_symlink()
        assert file.read_bytes() in served
        for name in item["path"].split("/"):
            assert len(name.encode()) <= 255
            assert not any(ord(c) < 32 for c in name)
    by_url = {i["url"]: i["path"] for i in items}
    h = f"site.test_{server.port}"
    assert by_url[server.url("/cd")] == f"{h}/cd"  # never the header's name
    assert by_url[server.url("/con")] == f"{h}/%63on"
    assert by_url[server.url("/trail.")] == f"{h}/trail%2E"
    assert by_url[server.url("/case")] != by_url[server.url("/CASE")]
    assert by_url[server.url(f"/{LONG}1")] != by_url[server.url(f"/{LONG}2")]
    # the file /f and the folder f/ both kept, deterministically named
    assert {by_url[server.url("/f")], by_url[server.url("/f/g")]} in (
        {f"{h}/f", f"{h}/f%~d/g"},
        {f"{h}/f%~f", f"{h}/f/g"},
    )
    assert result.stats.get("webspider/mirror/refused_count", 0) == 0


@pytest.mark.parametrize("where", ["host", "folder", "file"])
@deferred_f_from_coro_f
async def test_planted_symlinks_are_refused(tmp_path, server, where):
    server.add("/", html('<a href="/sub/x.txt">x</a> <a href="/file.txt">f</a>'))
    server.add("/sub/x.txt", Page(b"evil", content_type="text/plain"))
    server.add("/file.txt", Page(b"evil", content_type="text/plain"))
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "file.txt").write_bytes(b"precious")
    site = tmp_path / "out" / "mirror" / f"site.test_{server.port}"
    if where == "host":
        site.parent.mkdir(parents=True)
        site.symlink_to(victim)
    else:
        site.mkdir(parents=True)
        if where == "folder":
            (site / "sub").symlink_to(victim)
        else:
            (site / "file.txt").symlink_to(victim / "file.txt")
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert sorted(p.name for p in victim.iterdir()) == ["file.txt"]
    assert (victim / "file.txt").read_bytes() == b"precious"
    assert result.stats["webspider/mirror/refused_count"] >= 1
    if where == "file":  # what was refused is not linked as if it were there
        index = (site / "index.html").read_text()
        assert f'href="{server.url("/file.txt")}"' in index
        assert 'href="sub/x.txt"' in index


@deferred_f_from_coro_f
async def test_never_writes_over_the_crawls_own_files(tmp_path, server):
    server.add("/", html('<a href="/feed.jsonl">f</a>'))
    server.add("/feed.jsonl", Page(b"evil", content_type="text/plain"))
    feed = tmp_path / "out" / "mirror" / f"site.test_{server.port}" / "feed.jsonl"
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        settings={"FEEDS": {str(feed): {"format": "jsonlines"}}},
    )
    assert b"evil" not in feed.read_bytes()
    assert feed.read_text().count("\n") == 2  # the two items
    assert result.stats["webspider/mirror/refused_count"] == 1


@deferred_f_from_coro_f
async def test_a_folder_replaced_by_a_symlink_during_the_crawl_is_refused(
    tmp_path, server
):
    """The mirror plans a file's path with the folders it walked before
    (SafeTree.plan keeps them); a folder swapped for a symlink meanwhile is
    still refused by the write, and nothing lands outside the mirror."""
    victim = tmp_path / "victim"
    victim.mkdir()
    site = tmp_path / "out" / "mirror" / f"site.test_{server.port}"

    def answer(seen):
        if seen.path == "/robots.txt":
            return Page(b"", status=404)
        if seen.path == "/":
            return Page(html('<a href="/sub/1.html">1</a>'))
        n = int(seen.path.removeprefix("/sub/").removesuffix(".html"))
        if n == 4 and (site / "sub").is_dir() and not (site / "sub").is_symlink():
            # the mirror has walked sub/ by now (2.html, 3.html planned)
            (site / "sub").rename(site / "old")
            (site / "sub").symlink_to(victim)
        return Page(html(f'<a href="/sub/{n + 1}.html">next</a>' if n < 6 else "end"))

    server.answer = answer
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert list(victim.iterdir()) == []
    assert (site / "sub").is_symlink()
    # 3.html's write may come after the swap (the crawl asks for 4.html once
    # it parsed 3.html): every page from the swap on is refused, at the write
    # or already at the plan, and none is lost silently
    written = sorted(p.name for p in (site / "old").iterdir())
    assert written in (["1.html", "2.html", "3.html"], ["1.html", "2.html"])
    assert result.stats["webspider/mirror/refused_count"] == 6 - len(written)
