"""Whether a crawl may continue the crawl state it finds (before it starts)."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from webspider import settings as defaults
from webspider.config import ConfigError
from webspider.frontier.pages import META_PAGES_TAIL, PagesFile
from webspider.frontier.resume import (
    check_crawl_state,
    open_crawl_state,
    state_path,
)
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import META_FINISHED, StoredRequest
from webspider.keys import PAGES_FILE


def settings(tmp_path, url="http://a.test/", **more):
    s = Settings()
    s.setmodule(defaults)
    s.set("WEBSPIDER_OUTPUT", str(tmp_path / "out"))
    s.set("WEBSPIDER_START_URLS", [url])
    for name, value in more.items():
        s.set(name, value)
    return s


def interrupted(tmp_path, **more):
    state, resumed = open_crawl_state(settings(tmp_path, **more))
    assert not resumed
    state.close()  # not finished


def test_state_in_the_output_or_jobdir(tmp_path):
    assert state_path(settings(tmp_path)) == tmp_path / "out/.webspider-state.sqlite3"
    with_job = settings(tmp_path, JOBDIR=str(tmp_path / "job"))
    assert state_path(with_job) == tmp_path / "job/webspider-state.sqlite3"


def test_same_crawl_continues(tmp_path):
    interrupted(tmp_path)
    check_crawl_state(settings(tmp_path))
    state, resumed = open_crawl_state(settings(tmp_path))
    assert resumed
    state.close()


def test_the_check_leaves_the_leases_for_the_crawl_to_count(tmp_path):
    # a crawl killed with three requests in flight
    state, _ = open_crawl_state(settings(tmp_path))
    state.add(
        [
            StoredRequest(key=f"http://a.test/{i}", url=f"http://a.test/{i}")
            for i in "abcd"
        ]
    )
    state.lease(3, deadline=1e12)
    state.close()  # what a kill leaves: the leases are in the file
    check_crawl_state(settings(tmp_path))
    state, resumed = open_crawl_state(settings(tmp_path))
    try:
        assert resumed
        assert state.released_on_open == 3  # "… (3 of them were in flight)"
        assert state.counts().queued == 4
    finally:
        state.close()


@pytest.mark.parametrize(
    "changed",
    [
        {"url": "http://b.test/"},
        {"WEBSPIDER_SCOPE": "domain"},
        {"WEBSPIDER_EXCLUDE": ["http://a.test/x/"]},
    ],
)
def test_other_start_urls_or_scope_are_refused(tmp_path, changed):
    interrupted(tmp_path)
    with pytest.raises(ConfigError, match=r"other start URLs or scope.*restart=1"):
        check_crawl_state(settings(tmp_path, **changed))
    check_crawl_state(settings(tmp_path, WEBSPIDER_STATE_RESTART=True, **changed))
    state, resumed = open_crawl_state(
        settings(tmp_path, WEBSPIDER_STATE_RESTART=True, **changed)
    )
    assert not resumed
    state.close()


def test_another_depth_cap_is_refused(tmp_path):
    # queued at the old cap, deferred at the new one: half applied
    interrupted(tmp_path, WEBSPIDER_DEPTH_MAX=2)
    for other, given in ((1, "1"), (None, "none")):
        with pytest.raises(
            ConfigError,
            match=rf"another depth cap \(max_depth=2, given {given}\).*restart=1",
        ):
            check_crawl_state(settings(tmp_path, WEBSPIDER_DEPTH_MAX=other))
        with pytest.raises(ConfigError, match="another depth cap"):
            open_crawl_state(settings(tmp_path, WEBSPIDER_DEPTH_MAX=other))
    check_crawl_state(settings(tmp_path, WEBSPIDER_DEPTH_MAX="2"))
    state, resumed = open_crawl_state(settings(tmp_path, WEBSPIDER_DEPTH_MAX=2))
    assert resumed
    state.set_meta(META_FINISHED, "1")
    state.close()
    # a finished crawl: the next one may have any cap
    check_crawl_state(settings(tmp_path, WEBSPIDER_DEPTH_MAX=5))
    state, resumed = open_crawl_state(settings(tmp_path, WEBSPIDER_DEPTH_MAX=5))
    assert not resumed
    state.close()
    with pytest.raises(ConfigError, match=r"max_depth=5, given none"):
        check_crawl_state(settings(tmp_path))


def test_another_mirror_is_refused(tmp_path):
    # the pages fetched so far are in the first mirror (or in none): the end's
    # fix-up would convert half a mirror, and the rest would never be written
    interrupted(tmp_path)  # the default mirror, <output>/mirror
    for other, given in (("0", "0"), (str(tmp_path / "elsewhere"), "elsewhere")):
        with pytest.raises(
            ConfigError,
            match=rf"another mirror \(mirror=mirror, given [^)]*{given}\).*restart=1",
        ):
            check_crawl_state(settings(tmp_path, WEBSPIDER_MIRROR=other))
        with pytest.raises(ConfigError, match="another mirror"):
            open_crawl_state(settings(tmp_path, WEBSPIDER_MIRROR=other))
    # the same folder, named another way, continues
    same = str(tmp_path / "out" / "mirror")
    check_crawl_state(settings(tmp_path, WEBSPIDER_MIRROR=same))
    state, resumed = open_crawl_state(settings(tmp_path, WEBSPIDER_MIRROR="1"))
    assert resumed
    state.set_meta(META_FINISHED, "1")
    state.close()
    # a finished crawl: the next one may write its mirror anywhere, or none
    state, resumed = open_crawl_state(settings(tmp_path, WEBSPIDER_MIRROR="0"))
    assert not resumed
    state.close()
    with pytest.raises(ConfigError, match=r"another mirror \(mirror=0, given mirror\)"):
        check_crawl_state(settings(tmp_path))


def test_an_output_folder_moved_as_a_whole_continues(tmp_path):
    interrupted(tmp_path)
    (tmp_path / "out").rename(tmp_path / "moved")
    moved = settings(tmp_path, WEBSPIDER_OUTPUT=str(tmp_path / "moved"))
    check_crawl_state(moved)
    state, resumed = open_crawl_state(moved)
    assert resumed
    state.close()


def interrupted_with_pages(tmp_path, lines):
    """A crawl that committed ``lines`` of pages.jsonl, as the scheduler
    does, then stopped."""
    state, _ = open_crawl_state(settings(tmp_path))
    pages = PagesFile(tmp_path / "out" / PAGES_FILE)
    pages.write(lines)
    state.set_offset(PAGES_FILE, pages.sync())
    state.set_meta(META_PAGES_TAIL, pages.tail())
    state.commit()
    pages.write([b'{"url": "http://a.test/not-committed"}\n'])
    pages.close()
    state.close()
    return tmp_path / "out" / PAGES_FILE


def test_a_pages_file_written_over_since_is_refused(tmp_path):
    lines = [b'{"url": "http://a.test/%d"}\n' % i for i in range(3)]
    path = interrupted_with_pages(tmp_path, lines)
    kept = path.read_bytes()
    check_crawl_state(settings(tmp_path))  # this crawl's own, a line after it
    other = [b'{"url": "http://b.test/%d"}\n' % i for i in range(5)]
    for written_over in (b"".join(lines[:2]), b"", b"".join(other)):
        path.write_bytes(written_over)  # cut, emptied, another crawl's (longer)
        with pytest.raises(
            ConfigError, match=r"pages\.jsonl: not the file this crawl wrote.*restart=1"
        ):
            check_crawl_state(settings(tmp_path))
    path.unlink()
    with pytest.raises(ConfigError, match="not the file this crawl wrote"):
        check_crawl_state(settings(tmp_path))
    check_crawl_state(settings(tmp_path, WEBSPIDER_STATE_RESTART=True))
    path.write_bytes(kept)  # put back
    check_crawl_state(settings(tmp_path))


def test_after_a_finished_crawl_a_new_one(tmp_path):
    state, _ = open_crawl_state(settings(tmp_path))
    state.set_meta(META_FINISHED, "1")
    state.close()
    check_crawl_state(settings(tmp_path, url="http://b.test/"))
    state, resumed = open_crawl_state(settings(tmp_path, url="http://b.test/"))
    assert not resumed
    assert state.get_meta("run") == "2"
    state.close()


def test_corrupt_and_locked_states_are_refused(tmp_path):
    interrupted(tmp_path)
    path = state_path(settings(tmp_path))
    holder = SQLiteState(path)
    with pytest.raises(ConfigError, match="another crawl is running"):
        check_crawl_state(settings(tmp_path))
    holder.close()
    path.write_bytes(b"garbage" * 1000)
    with pytest.raises(ConfigError, match=r"corrupt.*restart=1"):
        check_crawl_state(settings(tmp_path))
    check_crawl_state(settings(tmp_path, WEBSPIDER_STATE_RESTART=True))


def test_the_commit_cadence_comes_from_the_settings(tmp_path):
    state, _ = open_crawl_state(settings(tmp_path))
    assert (state.commit_interval, state.commit_acks) == (1.0, 128)
    state.close()
    state, _ = open_crawl_state(settings(tmp_path, WEBSPIDER_STATE_COMMIT_PAGES="0"))
    assert (state.commit_interval, state.commit_acks) == (1.0, None)  # time only
    state.close()
    state, _ = open_crawl_state(
        settings(
            tmp_path,
            WEBSPIDER_STATE_COMMIT_INTERVAL="2.5",
            WEBSPIDER_STATE_COMMIT_PAGES="2",
        )
    )
    assert (state.commit_interval, state.commit_acks) == (2.5, 2)
    state.add(
        [
            StoredRequest(key=f"http://a.test/{i}", url=f"http://a.test/{i}")
            for i in range(2)
        ]
    )
    state.ack([lease.ticket for lease in state.lease(1, deadline=1e12)])
    assert not state.commit_due()
    state.ack([lease.ticket for lease in state.lease(1, deadline=1e12)])
    assert state.commit_due()  # two pages done, long before 2.5 s
    state.close()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("WEBSPIDER_STATE_COMMIT_PAGES", "-1", "at least 0"),
        ("WEBSPIDER_STATE_COMMIT_PAGES", "many", "whole number"),
        ("WEBSPIDER_STATE_COMMIT_INTERVAL", "0", "more than 0 seconds"),
    ],
)
def test_a_bad_commit_cadence_is_refused(tmp_path, name, value, message):
    with pytest.raises(ConfigError, match=message):
        check_crawl_state(settings(tmp_path, **{name: value}))
