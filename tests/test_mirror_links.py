import pytest

from webspider.mirror.entry import Entry
from webspider.mirror.links import (
    already_points,
    convert,
    fix_up,
    needs_fix_up,
    unconvert,
)
from webspider.mirror.state import MirrorState
from webspider.page.links import extract_page
from webspider.records import MemoryRecordStore

PAGE = "http://h/docs/page"
SOURCE = ("h", "docs", "page.html")


@pytest.fixture
def state():
    s = MirrorState(MemoryRecordStore(), "/m")
    for url, path in [
        (PAGE, "h/docs/page.html"),
        ("http://h/docs/other", "h/docs/other.html"),
        ("http://h/img/a.png", "h/img/a.png"),
        ("http://h/q?x=1", "h/q@x=1.html"),
        ("http://h/", "h/index.html"),
    ]:
        s.put(Entry(url=url, path=tuple(path.split("/")), hash="", size=0))
    s.alias("http://h/old", "http://h/docs/other")
    return s


def converted(state, link):
    page = f'<a href="{link}">x</a>'.encode()
    result = convert(
        page, state, SOURCE, page_url=PAGE, base_url=PAGE, encoding="utf-8", html=True
    )
    # the crawl's own scan of the page (its spans and joined links) gives
    # the same conversion as scanning the page again
    scanned = extract_page(page, PAGE, "utf-8")
    again = convert(
        page,
        state,
        SOURCE,
        page_url=PAGE,
        base_url=PAGE,
        encoding="utf-8",
        html=True,
        page=scanned,
    )
    assert again == result
    return result.data.decode().removeprefix('<a href="').removesuffix(
        '">x</a>'
    ), result


def stored(written):
    """The state entry of the page ``written`` (a Conversion) at SOURCE."""
    return Entry(
        url=PAGE,
        path=SOURCE,
        hash="",
        size=0,
        pending=sorted(written.pending),
        kept=written.kept,
        restore=written.restore,
    )


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ("other", "other.html"),  # mirrored: relative path to the file
        ("/docs/other#s", "other.html#s"),
        ("http://h/docs/other", "other.html"),
        ("../img/a.png", "../img/a.png"),  # already opens the file: kept
        ("/img/a.png", "../img/a.png"),
        ("/q?x=1", "../q@x=1.html"),
        ("/", "../index.html"),
        ("/old", "other.html"),  # a redirect leads to its target's file
        ("#top", "#top"),
        ("mailto:a@h", "mailto:a@h"),
        ("http://elsewhere/x", "http://elsewhere/x"),  # not mirrored: absolute
        # the page's own site, not mirrored yet: where its file will be (the
        # fix-up checks)
        ("/missing?y=2", "../missing@y=2"),
        ("../new.css", "../new.css"),  # not yet mirrored but will open: kept
        ("new", "new"),  # kept too; the fix-up repoints it if it becomes new.html
    ],
)
def test_convert(state, link, expected):
    assert converted(state, link)[0] == expected


def test_convert_remembers_what_to_look_at_again(state):
    _, result = converted(state, "../new.css")
    assert result.kept == {"http://h/new.css": "h/new.css"}
    _, result = converted(state, "/missing")
    assert result.kept == {"http://h/missing": "h/missing"}
    assert result.restore == {"../missing": "http://h/missing"}
    _, result = converted(state, "http://elsewhere/x")
    assert result.pending == {"http://elsewhere/x"}


def test_links_led_to_where_files_were_expected_are_checked_by_the_fix_up(state):
    # Written while /a, /b and /c were not mirrored: each link leads where its
    # file is expected. /a turns up there, /b under another name, /c never.
    page = b'<a href="/a">a</a><a href="/b#s">b</a><a href="/c">c</a>'
    written = convert(
        page, state, SOURCE, page_url=PAGE, base_url=PAGE, encoding="utf-8", html=True
    )
    assert written.data == (
        b'<a href="../a">a</a><a href="../b#s">b</a><a href="../c">c</a>'
    )
    entry = stored(written)
    state.put(Entry(url="http://h/a", path=("h", "a"), hash="", size=0))
    state.put(Entry(url="http://h/b", path=("h", "b.html"), hash="", size=0))
    assert needs_fix_up(entry, state)
    for spans in (None, written.spans):  # a scan, or the spans remembered
        fixed = fix_up(
            written.data, entry, state, encoding="utf-8", html=True, spans=spans
        )
        assert fixed.data == (
            b'<a href="../a">a</a><a href="../b.html#s">b</a><a href="http://h/c">c</a>'
        )
        assert fixed.pending == {"http://h/c"}
        assert fixed.kept == {"http://h/a": "h/a"}


def test_base_points_to_the_file_itself(state):
    page = b'<base href="http://h/elsewhere/"><a href="other">x</a>'
    result = convert(
        page,
        state,
        SOURCE,
        page_url=PAGE,
        base_url="http://h/elsewhere/",
        encoding=None,
        html=True,
    )
    # the link is read against the base, and written relative to the file
    assert result.data == (b'<base href="page.html"><a href="../elsewhere/other">x</a>')


def test_fix_up(state):
    page = (
        b'<a href="http://h/later">a</a><a href="later2.css">b</a>'
        b'<a href="gone.css">c</a>'
    )
    entry = Entry(
        url=PAGE,
        path=SOURCE,
        hash="",
        size=0,
        pending=["http://h/later"],
        kept={
            "http://h/docs/later2.css": "h/docs/later2.css",
            "http://h/docs/gone.css": "h/docs/gone.css",
        },
    )
    state.put(Entry(url="http://h/later", path=("h", "later.html"), hash="", size=0))
    state.put(
        Entry(
            url="http://h/docs/later2.css",
            path=("h", "docs", "later2%~f.css"),
            hash="",
            size=0,
        )
    )
    assert needs_fix_up(entry, state)
    result = fix_up(page, entry, state, encoding=None, html=True)
    assert result.data == (
        b'<a href="../later.html">a</a><a href="later2%25~f.css">b</a>'
        b'<a href="http://h/docs/gone.css">c</a>'
    )
    assert result.pending == {"http://h/docs/gone.css"}
    assert result.kept == {}


def test_links_to_absent_urls_are_written_as_the_fix_up_leaves_them(state):
    page = (
        b'<a href="gone.css#f">a</a><a href="../x/gone">b</a>'
        b'<a href="http://h/docs/gone.css">c</a><a href="other">d</a>'
    )

    def written():
        return convert(
            page, state, SOURCE, page_url=PAGE, base_url=PAGE, encoding=None, html=True
        )

    # not known yet: kept expecting a file, made absolute by the fix-up
    first = written()
    assert first.kept.keys() == {"http://h/docs/gone.css", "http://h/x/gone"}
    entry = Entry(
        url=PAGE,
        path=SOURCE,
        hash="",
        size=0,
        pending=sorted(first.pending),
        kept=first.kept,
        restore=first.restore,
    )
    fixed = fix_up(first.data, entry, state, encoding=None, html=True)
    # known as fetched and not mirrored: written so at once
    state.mark_absent("http://h/docs/gone.css")
    state.mark_absent("http://h/x/gone")
    at_once = written()
    assert (
        at_once.data
        == fixed.data
        == (
            b'<a href="http://h/docs/gone.css#f">a</a><a href="http://h/x/gone">b</a>'
            b'<a href="http://h/docs/gone.css">c</a><a href="other.html">d</a>'
        )
    )
    assert (
        at_once.pending
        == fixed.pending
        == {"http://h/docs/gone.css", "http://h/x/gone"}
    )
    assert at_once.kept == fixed.kept == {}


def test_unconvert_gives_back_absolute_urls(state):
    page = b'<a href="other">x</a> <a href="http://h/docs/other">y</a>'
    result = convert(
        page, state, SOURCE, page_url=PAGE, base_url=PAGE, encoding=None, html=True
    )
    entry = state.entry(PAGE)
    expected = (
        b'<a href="http://h/docs/other">x</a> <a href="http://h/docs/other">y</a>'
    )
    # by file ownership (a state written without the restore map)
    entry.restore, entry.restore_joins = {}, False
    back = unconvert(result.data, entry, state, page_url=PAGE, encoding=None, html=True)
    assert back == expected
    # with what the conversion recorded
    assert result.restore == {"other.html": "http://h/docs/other"}
    entry.restore = result.restore
    back = unconvert(result.data, entry, state, page_url=PAGE, encoding=None, html=True)
    assert back == expected


@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        ("b.png", ("h", "a", "b.png"), True),
        ("./b.png", ("h", "a", "b.png"), True),
        ("../a/b.png#x", ("h", "a", "b.png"), True),
        ("b.png?v=1", ("h", "a", "b.png@v=1"), False),
        ("b", ("h", "a", "b.html"), False),
        ("/a/b.png", ("h", "a", "b.png"), False),
        ("http://h/a/b.png", ("h", "a", "b.png"), False),
        ("c%20d.png", ("h", "a", "c d.png"), True),
    ],
)
def test_already_points(value, target, expected):
    assert already_points(value, ("h", "a", "page.html"), target) is expected


def _already_points_by_posixpath(value, source, target):
    """already_points as it was written first (posixpath's join and
    normpath): the segment walk that replaced it must answer the same."""
    import posixpath  # noqa: PLC0415
    from urllib.parse import unquote  # noqa: PLC0415

    from webspider.utils.url import url_scheme  # noqa: PLC0415

    if url_scheme(value) or value.startswith("//") or "?" in value:
        return False
    path = value.partition("#")[0]
    if not path or path.endswith("/") or "\\" in path:
        return False
    joined = posixpath.normpath(posixpath.join("/".join(source[:-1]), unquote(path)))
    return joined == "/".join(target)


def test_already_points_answers_as_posixpath_does():
    sources = [("h", "page.html"), ("h", "a", "page.html"), ("h", "a", "b", "p.html")]
    targets = [
        ("h", "page.html"),
        ("h", "a", "b.png"),
        ("h", "b.png"),
        ("h", "a", "b", "p.html"),
        ("h", "c", "d.html"),
        ("h", "a"),
        ("h",),
    ]
    pieces = ["", ".", "..", "a", "b", "b.png", "h", "c", "d.html", "p.html", "%2E%2E"]
    pieces += ["page.html", "a%2Fb.png", "%2Fh", "x%5Cy", "c%20d", ""]
    values = {"#f", "?q", "//h/a", "http://h/a", "mailto:x", "/", "/h/a/b.png"}
    for first in pieces:
        for second in pieces:
            for third in ("", "b.png", "..", "p.html#x", "d.html?v"):
                values.add("/".join(p for p in (first, second, third) if p != "-"))
                values.add("/" + "/".join((first, second, third)))
                values.add("../" + "/".join((first, second, third)))
    checked = 0
    for value in sorted(values):
        for source in sources:
            for target in targets:
                expected = _already_points_by_posixpath(value, source, target)
                assert already_points(value, source, target) is expected, (
                    value,
                    source,
                    target,
                )
                checked += expected
    assert checked > 50  # the set holds links that do point


def test_the_fix_up_reuses_the_spans_conversion_remembered(state):
    # A page converted while its links' files were missing, fixed up once
    # they are mirrored: with the spans the conversion remembered (no scan)
    # it comes out as with a scan of the stored page.
    page = (
        b'<a href="http://h/later">a</a> <a href="/later#s">b</a>'
        b'<img src="later2.png"><a href="http://elsewhere/x">c</a>'
        b'<a href="other">d</a>'
    )
    written = convert(
        page, state, SOURCE, page_url=PAGE, base_url=PAGE, encoding="utf-8", html=True
    )
    assert [value for _, _, value, _ in written.spans] == [
        "../later",  # where the file of http://h/later is expected
        "../later#s",
        "later2.png",
        "http://elsewhere/x",
    ]
    for start, end, value, _ in written.spans:
        assert written.data[start:end].decode() == value
    entry = stored(written)
    state.put(Entry(url="http://h/later", path=("h", "later.html"), hash="", size=0))
    state.put(
        Entry(url="http://h/docs/later2.png", path=("h", "x", "l.png"), hash="", size=0)
    )
    scanned = fix_up(written.data, entry, state, encoding="utf-8", html=True)
    remembered = fix_up(
        written.data, entry, state, encoding="utf-8", html=True, spans=written.spans
    )
    assert remembered == scanned
    assert remembered.data == (
        b'<a href="../later.html">a</a> <a href="../later.html#s">b</a>'
        b'<img src="../x/l.png"><a href="http://elsewhere/x">c</a>'
        b'<a href="other.html">d</a>'
    )
    assert [value for _, _, value, _ in remembered.spans] == ["http://elsewhere/x"]


def test_a_fix_up_done_again_on_its_own_output_changes_nothing(state):
    # A kill after the fix-up wrote a file but before its record was
    # committed: the next run fixes up the written file with the old record.
    page = (
        b'<a href="http://h/later">a</a><a href="later2.css">b</a>'
        b'<a href="gone.css">c</a><a href="/moved">d</a>'
    )
    written = convert(
        page, state, SOURCE, page_url=PAGE, base_url=PAGE, encoding="utf-8", html=True
    )
    entry = stored(written)
    state.put(Entry(url="http://h/later", path=("h", "later.html"), hash="", size=0))
    state.put(Entry(url="http://h/moved", path=("h", "m.html"), hash="", size=0))
    state.put(
        Entry(
            url="http://h/docs/later2.css",
            path=("h", "docs", "l2.css"),
            hash="",
            size=0,
        )
    )
    once = fix_up(written.data, entry, state, encoding="utf-8", html=True)
    assert once.data == (
        b'<a href="../later.html">a</a><a href="l2.css">b</a>'
        b'<a href="http://h/docs/gone.css">c</a><a href="../m.html">d</a>'
    )
    twice = fix_up(once.data, entry, state, encoding="utf-8", html=True)
    assert twice.data == once.data
    assert (twice.pending, twice.kept) == (once.pending, once.kept)
    # what the links stand for is known again (an update crawl reads it back)
    assert twice.restore == once.restore
