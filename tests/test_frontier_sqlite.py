"""What is particular to the SQLite crawl state: exactness under fingerprint
collisions, refusals (corrupt, truncated, other format, locked), durability
of committed batches across kill -9, and its size on disk."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from array import array
from pathlib import Path

import pytest
from scrapy import Request, Spider

from webspider.frontier import (
    keyfilter,
    recordvalues,
    sqlitedurability,
    sqlitehashed,
    sqlitelock,
    sqliterecords,
    sqliteschema,
    sqlitewaiting,
    waitingchunks,
)
from webspider.frontier import sqlite as sqlite_state
from webspider.frontier.requestdata import from_stored, to_stored
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.sqlitelock import StateLockedError, hold_lock
from webspider.frontier.state import FORMAT_VERSION as FORMAT
from webspider.frontier.state import StateError, StoredRequest
from webspider.keys import META_LINK_KIND, META_REFERER
from webspider.mirror.state import NS_PATHS
from webspider.records import MemoryRecords, flag_text, flagged, flags_of
from webspider.reports.crawlreport import NS_PAGES
from webspider.reports.duplicates import NS_CONTENT, _content_key
from webspider.reports.links import NS_LINKS
from webspider.storage import damaged_state
from webspider.utils.urlcodes import NS_CODES, UrlCodes, url_id


def req(path: str, depth: int = 0) -> StoredRequest:
    url = f"http://a.test/{path}"
    return StoredRequest(key=url, url=url, depth=depth)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state.sqlite3"


def same_fingerprints(monkeypatch, fingerprint) -> None:
    """Make the state fingerprint keys with ``fingerprint`` (one at a time
    and in batches alike), to force collisions."""
    monkeypatch.setattr(sqlite_state, "fingerprint", fingerprint)
    monkeypatch.setattr(
        sqlite_state, "fingerprints", lambda keys: array("i", map(fingerprint, keys))
    )


def test_a_fingerprint_collision_drops_no_url(path, monkeypatch):
    same_fingerprints(monkeypatch, lambda key: 7)
    state = SQLiteState(path)
    assert state.defer([req("d", 3)]) == [True]
    assert state.add([req("a"), req("b"), req("a"), req("c")]) == [
        True,
        True,
        False,
        True,
    ]
    assert ["http://a.test/" + k in state for k in "abcdz"] == [True] * 3 + [False] * 2
    state._confirmed.clear()
    keys = ["http://a.test/" + k for k in "zcdba"]
    assert state.contains_many(keys) == [False, True, False, True, True]
    assert state.add([req("d")]) == [True]  # the deferred one, under its own id
    state.close()
    state = SQLiteState(path)
    assert ["http://a.test/" + k in state for k in "abcdz"] == [True] * 4 + [False]
    assert sorted(x.request.key[-1] for x in state.lease(9, deadline=1e12)) == list(
        "abcd"
    )
    state.close()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(
            lambda p: p.write_bytes(b"not a database at all" * 100), id="junk"
        ),
        pytest.param(lambda p: p.write_bytes(b""), id="empty"),
        pytest.param(
            lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
            id="truncated",
        ),
    ],
)
def test_a_damaged_state_is_refused(path, damage):
    state = SQLiteState(path)
    state.add([req(f"page-{i}-" + "x" * 200) for i in range(2000)])
    state.close()
    damage(path)
    with pytest.raises(StateError, match=str(path)):
        SQLiteState(path).close()


def test_another_format_is_refused(path):
    state = SQLiteState(path)
    state.set_meta("format", "99")
    state.close()
    with pytest.raises(StateError, match="format 99"):
        SQLiteState(path)


@pytest.mark.parametrize("old", ["2", "3", "4", "5", "6", "7", "8", "9"])
def test_a_state_of_an_older_format_is_refused(path, old):
    # format 2's records named URLs by ids and per-feature codes, format 3
    # kept a waiting link in two rows and keyed the mirror's index by the
    # whole URL, format 4 kept a page's place in mirror.where, format 5 the
    # waiting links in the record table, format 6 64-bit fingerprints,
    # format 7 no cleared bits a chunk, format 8 done rows of status 3 and
    # hashed keys as base64 in the record table, format 9 no waiting_text
    # (an odd long-text length is a text's id in 10): never misread as the
    # current format's
    state = SQLiteState(path)
    state.set_meta("format", old)
    state.close()
    with pytest.raises(StateError, match=rf"format {old}.* reads format {FORMAT}"):
        SQLiteState(path)


def test_a_second_holder_is_refused_until_the_first_closes(path):
    first = SQLiteState(path)
    with pytest.raises(StateLockedError, match="in use by another crawl"):
        SQLiteState(path)
    first.close()
    SQLiteState(path).close()


CHILD = textwrap.dedent(
    """
    import os, sys, time
    from webspider.frontier.sqlite import SQLiteState
    from webspider.frontier.state import StoredRequest
    def req(p):
        return StoredRequest(key="http://a.test/" + p, url="http://a.test/" + p)
    s = SQLiteState(sys.argv[1])
    s.add([req(f"c{i}") for i in range(100)])
    leases = s.lease(10, deadline=1e12)
    s.ack([x.ticket for x in leases[:5]])
    s.set_offset("pages.jsonl", 500)
    s.records("mirror.index").put("http://a.test/c0", {"path": "c0.html"})
    s.commit()
    s.add([req(f"u{i}") for i in range(100)])   # never committed
    s.records("mirror.index").put("http://a.test/u0", {"path": "u0.html"})
    s.ack([x.ticket for x in leases[5:]])
    print("ready", flush=True)
    time.sleep(60)
    """
)


def test_a_commit_is_due_at_once_for_a_request_fetched_again(path):
    # leases committed and never acknowledged (closing does not release
    # them: as if their holder had died)
    state = SQLiteState(path)
    state.add([req(f"p{i}") for i in range(6)])
    held = state.lease(3, deadline=1e12)
    state.close()
    state = SQLiteState(path, commit_interval=3600)
    try:
        assert state.released_on_open == 3
        again = {lease.ticket for lease in held}
        leases = state.lease(6, deadline=1e12)
        fresh = [lease.ticket for lease in leases if lease.ticket not in again]
        refetched = [lease.ticket for lease in leases if lease.ticket in again]
        assert len(fresh) == len(refetched) == 3
        state.ack(fresh)  # fetched for the first time: waits for the second
        assert not state.commit_due()
        state.ack(refetched[:1])  # fetched once more after the kill
        assert state.commit_due()
        state.commit()
        assert not state.commit_due()
        state.ack(refetched[1:])
        assert state.commit_due()
    finally:
        state.close()


def start_child(script: str, path: Path) -> subprocess.Popen[str]:
    """``script`` run in another process on the state at ``path``, this
    tree's webspider imported; it prints "ready" once it holds the state."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    return subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )


def test_kill_9_keeps_the_committed_batch_and_returns_the_leases(path):
    child = start_child(CHILD, path)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(StateLockedError):
            SQLiteState(path)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    state = SQLiteState(path)  # the OS released the lock
    try:
        assert state.released_on_open == 5
        counts = state.counts()
        assert (counts.queued, counts.leased, counts.done) == (95, 0, 5)
        assert "http://a.test/c99" in state
        assert "http://a.test/u0" not in state
        assert state.get_offset("pages.jsonl") == 500
        index = state.records("mirror.index")
        assert index.get("http://a.test/c0") == {"path": "c0.html"}
        assert index.get("http://a.test/u0") is None
    finally:
        state.close()


class GatedFsync:
    """The durability thread's fsync, held until ``gate`` is set; records
    the inode it synced and when it finished."""

    def __init__(self, fail: OSError | None = None) -> None:
        self.gate = threading.Event()
        self.synced: list[tuple[int, float]] = []
        self.fail = fail

    def __call__(self, fd: int) -> None:
        assert self.gate.wait(10)
        if self.fail is not None:
            fail, self.fail = self.fail, None
            raise fail
        os.fsync(fd)
        self.synced.append((os.fstat(fd).st_ino, time.monotonic()))


def test_the_log_is_fsynced_after_the_commit_and_before_the_next(path, monkeypatch):
    fsync = GatedFsync()
    monkeypatch.setattr(sqlitedurability, "_fsync", fsync)
    state = SQLiteState(path)
    wal = path.with_name(path.name + "-wal")
    try:
        # in WAL mode, NORMAL: the COMMIT itself does not wait for the disk
        assert state._db.execute("PRAGMA synchronous").fetchone() == (1,)
        state.add([req("a"), req("b")])
        state.commit()  # returns while its fsync is held
        assert fsync.synced == []
        state.add([req("c")])
        threading.Timer(0.3, fsync.gate.set).start()
        started = time.monotonic()
        state.commit()  # waits for the first batch's fsync before it begins
        assert time.monotonic() - started >= 0.25
        assert len(fsync.synced) == 1
        assert fsync.synced[0][0] == os.stat(wal).st_ino  # the live log
        state.wait_durable()
        assert len(fsync.synced) == 2
        # closing waits for the last commit's fsync
        fsync.gate.clear()
        state.add([req("d")])
        state.set_meta("finished", "1")
        threading.Timer(0.3, fsync.gate.set).start()
        started = time.monotonic()
    finally:
        state.close()
    assert time.monotonic() - started >= 0.25
    assert len(fsync.synced) == 3


def test_the_log_fsynced_is_the_live_one_after_checkpoints(path, monkeypatch):
    fsync = GatedFsync()
    fsync.gate.set()
    monkeypatch.setattr(sqlitedurability, "_fsync", fsync)
    state = SQLiteState(path)
    wal = path.with_name(path.name + "-wal")
    try:
        for batch in range(40):  # past the log's limit: checkpoints, restarts
            state.add([req(f"{batch}-{i}-{'x' * 200}") for i in range(100)])
            state.commit()
            state.wait_durable()
            assert fsync.synced[-1][0] == os.stat(wal).st_ino
        assert os.stat(wal).st_size <= 2 * sqlitedurability._WAL_BYTES
        assert len(fsync.synced) == 40
    finally:
        state.close()


def test_the_log_stays_bounded_while_the_next_batch_begins_at_once(path):
    """The crawl's next transaction begins right after each COMMIT (an ack,
    a lease): the log must still start again after its checkpoints, never
    pass its limit by more than a commit's pages, at its largest."""
    state = SQLiteState(path)
    wal = path.with_name(path.name + "-wal")
    largest = 0
    try:
        for batch in range(60):
            state.add([req(f"{batch}-{i}-{'x' * 300}") for i in range(100)])
            state.commit()
            state.add([req(f"{batch}-next")])  # the next batch's first write
            largest = max(largest, os.stat(wal).st_size)
    finally:
        state.close()
    # 60 commits of ~40 KiB of rows each: ~4x the limit in all
    assert largest <= 2 * sqlitedurability._WAL_BYTES


def test_a_checkpoint_by_another_connection_does_not_start_the_log_again(tmp_path):
    """Why the checkpoints stay in the COMMIT on the event loop (sqlite.py,
    "Durability"; bench/wal_restart.py): SQLite writes the log from its
    start only for a transaction that began after a complete checkpoint;
    one copied by a second connection while the writer's next transaction
    is already open (the crawl's) leaves the log growing. If SQLite ever
    changes that, the checkpoint can move to the fsync thread."""
    db_path = tmp_path / "t.sqlite3"
    db = sqlite3.connect(db_path, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute(f"PRAGMA journal_size_limit={1 << 20}")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
    db.commit()
    other = sqlite3.connect(db_path, check_same_thread=False)
    wal = Path(f"{db_path}-wal")
    try:
        for n in range(30):
            db.executemany(
                "INSERT INTO t VALUES (?, ?)",
                [(n * 100 + i, os.urandom(1000)) for i in range(100)],
            )
            db.commit()
            db.execute("INSERT INTO t VALUES (?, x'00')", (-n - 1,))  # begins now
            _busy, frames, copied = other.execute(
                "PRAGMA wal_checkpoint(PASSIVE)"
            ).fetchone()
            assert copied == frames  # every frame copied, complete...
        # ...and still never started again: 30 commits' pages, ~3 MiB
        assert wal.stat().st_size > 2 * (1 << 20)
    finally:
        other.close()
        db.close()


def test_an_fsync_error_is_raised_by_the_next_commit(path, monkeypatch):
    fsync = GatedFsync(fail=OSError(5, "Input/output error"))
    fsync.gate.set()
    monkeypatch.setattr(sqlitedurability, "_fsync", fsync)
    state = SQLiteState(path)
    try:
        state.add([req("a")])
        state.commit()
        with pytest.raises(OSError, match="Input/output error"):
            state.commit()
    finally:
        state.close()


def test_a_power_cut_keeps_the_last_durable_commit(path, tmp_path):
    """What the durability argument rests on (sqlite.py, "Durability"): a
    log whose tail after the last fsynced commit is torn — cut anywhere, or
    garbage — opens as that commit, never as a mix or a corrupt state."""
    state = SQLiteState(path)
    wal = path.with_name(path.name + "-wal")
    try:
        state.add([req(f"a{i}") for i in range(50)])
        state.set_offset("pages.jsonl", 100)
        state.commit()
        state.wait_durable()
        durable = os.stat(wal).st_size
        state.add([req(f"b{i}") for i in range(50)])
        state.set_offset("pages.jsonl", 200)
        state.commit()
        state.wait_durable()
        whole = os.stat(wal).st_size
        assert whole > durable
        image = path.read_bytes()
        log = wal.read_bytes()
    finally:
        state.close()
    rng = random.Random(17)
    tails = [b"", log[durable : durable + 1000], log[durable:-7]]
    tails.append(bytes(rng.randrange(256) for _ in range(whole - durable)))
    for n, tail in enumerate(tails):
        copy = tmp_path / f"cut{n}" / "state.sqlite3"
        copy.parent.mkdir()
        copy.write_bytes(image)
        copy.with_name(copy.name + "-wal").write_bytes(log[:durable] + tail)
        cut = SQLiteState(copy)
        try:
            assert cut.get_offset("pages.jsonl") == 100
            assert "http://a.test/a49" in cut
            assert "http://a.test/b0" not in cut
            assert len(cut) == 50
        finally:
            cut.close()


KILLED_WHILE_SYNCING = textwrap.dedent(
    """
    import sys, threading
    from webspider.frontier import sqlitedurability
    from webspider.frontier.sqlite import SQLiteState
    from webspider.frontier.state import StoredRequest
    never = threading.Event()
    sqlitedurability._fsync = lambda fd: never.wait()  # the fsync still runs at the kill
    def req(p):
        return StoredRequest(key="http://a.test/" + p, url="http://a.test/" + p)
    s = SQLiteState(sys.argv[1])
    s.add([req(f"c{i}") for i in range(100)])
    s.set_offset("pages.jsonl", 500)
    s.commit()
    s.add([req(f"u{i}") for i in range(100)])   # never committed
    print("ready", flush=True)
    threading.Event().wait(60)
    """
)


def test_kill_9_while_the_fsync_runs_keeps_the_commit(path):
    child = start_child(KILLED_WHILE_SYNCING, path)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    state = SQLiteState(path)
    try:
        assert len(state) == 100
        assert "http://a.test/c99" in state
        assert "http://a.test/u0" not in state
        assert state.get_offset("pages.jsonl") == 500
    finally:
        state.close()


ORIGIN = "http://a.test"


@pytest.mark.parametrize(
    ("key", "short"),
    [
        ("http://a.test/x?q=1", "/x?q=1"),
        ("http://a.test", ""),
        ("http://a.test?q", "?q"),
        ("http://a.test#f", "#f"),
        # another host that begins with the origin's name
        ("http://a.testy/x", "http://a.testy/x"),
        ("http://a.test:81/x", "http://a.test:81/x"),
        ("HEAD http://a.test/x", "HEAD http://a.test/x"),
        # keys no crawl makes, which would read as an origin's path
        ("/x", "!/x"),
        ("", "!"),
        ("!x", "!!x"),
        ("ẞ://a.test/", "!ẞ://a.test/"),
    ],
)
def test_a_row_keeps_its_key_without_its_origin(key, short):
    assert sqliteschema.short_key(key, ORIGIN) == short
    assert sqliteschema.full_key(short, ORIGIN) == key


def test_keys_of_every_shape_come_back_exactly(path):
    odd = ["http://a.test/x", "http://a.testy/", "/x", "", "!x", "HEAD http://a.test/"]
    requests = [
        StoredRequest(key=key, url="http://a.test/x" if key else "http://a.test")
        for key in odd
    ]
    state = SQLiteState(path)
    assert state.add(requests) == [True] * len(odd)
    state.close()
    state = SQLiteState(path)  # the filter rebuilt from the rows
    try:
        state._confirmed.clear()
        assert [key in state for key in odd] == [True] * len(odd)
        assert state.contains_many([*odd, "http://a.test/y"]) == [True] * len(odd) + [
            False
        ]
        leased = state.lease(len(odd), deadline=1e12, strict=False)
        assert sorted(lease.request.key for lease in leased) == sorted(odd)
    finally:
        state.close()


def test_rows_are_kept_in_the_order_they_were_queued(path):
    # appended at the end of the table (see the module docstring), and a
    # deferred URL queued later goes after what is queued already
    state = SQLiteState(path)
    state.defer([req("d", 1)])
    state.add([req("a", 1), req("b", 1)])
    state.add([req("d", 1), req("c", 1)])
    state.commit()
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT key FROM url ORDER BY id").fetchall()
    finally:
        db.close()
    assert [key for (key,) in rows] == ["/a", "/b", "/d", "/c"]
    assert [x.request.key[-1] for x in state.lease(4, deadline=1e12)] == list("abdc")
    state.close()


def test_bytes_per_url_on_disk(path):
    state = SQLiteState(path)
    n = 20_000
    for start in range(0, n, 1000):
        state.add(
            [
                StoredRequest(
                    key=f"https://www.example.org/section-{i % 97}/article/{i}",
                    url=f"https://www.example.org/section-{i % 97}/article/{i}",
                    depth=i % 5,
                    referer="https://www.example.org/",
                )
                for i in range(start, start + 1000)
            ]
        )
    state.lease(n // 2, deadline=1e12, strict=False)
    state.close()
    size = sum(p.stat().st_size for p in path.parent.iterdir())
    assert size / n < 300


def test_done_rows_and_a_finished_state_keep_only_what_is_read_again(path):
    state = SQLiteState(path)
    state.add(
        [
            StoredRequest(key=k, url=k, depth=1, meta={"m": 1}, referer="http://r/")
            for k in (f"http://a.test/{i}" for i in range(2000))
        ]
    )
    leases = state.lease(1500, deadline=1e12, strict=False)
    state.ack([lease.ticket for lease in leases[:1000]])
    state.records("test.big").put_many((str(i), "x" * 200) for i in range(5000))
    state.commit()
    # a resumed crawl still gets what a queued request needs
    state.release([lease.ticket for lease in leases[1000:]])
    again = state.lease(1, deadline=1e12, strict=False)[0].request
    assert (again.meta, again.referer) == ({"m": 1}, "http://r/")
    state.records("test.big").delete(str(i) for i in range(4000))
    state.commit()
    db = sqlite3.connect(path)  # a reader of what was committed
    try:
        done = db.execute(
            "SELECT referer, extra FROM url WHERE status = ?", (sqliteschema.DONE,)
        )
        assert set(done.fetchall()) == {(None, None)}
        assert db.execute("SELECT COUNT(*) FROM url").fetchone() == (2000,)
    finally:
        db.close()
    state.set_meta("finished", "1")
    state.close()
    db = sqlite3.connect(path)
    try:
        # nothing but the metadata: the next run starts a fresh state
        assert db.execute("SELECT COUNT(*) FROM url").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM record").fetchone() == (0,)
        assert db.execute("PRAGMA freelist_count").fetchone() == (0,)
    finally:
        db.close()
    fresh = SQLiteState(path)  # still a readable state
    try:
        assert fresh.get_meta("finished") == "1" and len(fresh) == 0
    finally:
        fresh.close()


def written_bytes() -> int:
    """Bytes this process passed to write() so far (Linux)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


def test_a_finished_state_keeps_its_metadata_alone(path):
    """Closing a finished state leaves its metadata, in a new file of a few
    KiB. The queue's rows were copied too (nothing read them again): the
    copy had the file at its largest and the rows' copy on disk at once,
    the peak of the crawl's state on disk; and deleting the records in
    place wrote each of their pages to the log (more than their 4 MB)."""
    state = SQLiteState(path)
    state.add([req(f"{i}") for i in range(60000)])
    leases = state.lease(60000, deadline=1e12, strict=False)
    state.ack([lease.ticket for lease in leases])
    state.records("test.big").put_many((str(i), "x" * 200) for i in range(20000))
    state.set_meta("run", "3")
    state.set_meta("finished", "1")
    state.commit()
    written = written_bytes()
    state.close()
    written = written_bytes() - written
    size = path.stat().st_size
    assert size < 64 * 1024, size
    # the close writes the metadata's copy and the log's last pages: the
    # copy of the queue's rows wrote ~2.5 MB beside the file at its
    # largest, and deleting the records more than their 4 MB
    assert written < 256 * 1024, written
    # no log, no new file left beside it
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == [path.name, path.name + ".lock"]
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT COUNT(*) FROM url").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM record").fetchone() == (0,)
        assert db.execute("PRAGMA page_size").fetchone() == (1024,)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    again = SQLiteState(path)  # a readable finished state, its metadata kept
    try:
        assert again.get_meta("finished") == "1"
        assert again.get_meta("run") == "3"
        assert len(again) == 0
    finally:
        again.close()


def test_batched_confirmation_with_collisions(path, monkeypatch):
    same_fingerprints(monkeypatch, len)
    state = SQLiteState(path)
    state.add([req("aa"), req("bb"), req("c")])
    state.defer([req("dd")])
    keys = ["http://a.test/" + k for k in ["aa", "bb", "cc", "c", "d", "dd", "aa"]]
    assert state.contains_many(keys) == [True, True, False, True, False, False, True]
    state.close()


def test_links_to_pages_queued_here_are_answered_without_a_query(path):
    state = SQLiteState(path)
    state.add([req("a"), req("b")])
    statements: list[str] = []
    state._db.set_trace_callback(statements.append)
    keys = ["http://a.test/" + k for k in ["b", "a", "new", "b"]]
    assert state.contains_many(keys) == [True, True, False, True]
    assert not [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    state._db.set_trace_callback(None)
    state.close()
    # a reopened state knows them from its file: one query confirms them
    again = SQLiteState(path)
    again._db.set_trace_callback(statements.append)
    assert again.contains_many(keys) == [True, True, False, True]
    assert [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    again._db.set_trace_callback(None)
    again.close()


def test_a_lease_that_takes_all_an_origin_has_queued_asks_once(path):
    # Scrapy hands the scheduler a crawl's start requests one at a time, and
    # each is leased as it comes: one query for it, none to find nothing more
    state = SQLiteState(path)
    selects: list[str] = []
    state._db.set_trace_callback(
        lambda sql: selects.append(sql) if sql.lstrip().startswith("SELECT") else None
    )
    for name in ("a", "b", "c"):
        state.add([req(name)])
        [lease] = state.lease(16, deadline=1e12)
        assert lease.request.url == "http://a.test/" + name
    assert state.lease(16, deadline=1e12) == []
    assert len(selects) == 3
    # an origin with more queued than the lease takes is asked again
    state.add([req(f"more{i}") for i in range(20)])
    selects.clear()
    assert len(state.lease(16, deadline=1e12)) == 16
    assert len(state.lease(16, deadline=1e12)) == 4
    assert len(selects) == 2
    state._db.set_trace_callback(None)
    state.close()


class _Statements:
    """A connection that notes each statement and its bound values."""

    def __init__(self, db):
        self.db = db
        self.seen: list[tuple[str, tuple]] = []

    def execute(self, sql, params=()):
        self.seen.append((sql, tuple(params)))
        return self.db.execute(sql, params)

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_the_lease_query_names_the_queued_status_for_its_partial_index(path):
    # url_queued is a partial index (WHERE status = 1): a status given as a
    # bound value made SQLite prepare the query again on every lease
    state = SQLiteState(path)
    state.add([req("a"), req("b")])
    noted = _Statements(state._db)
    state._db = noted
    [lease] = state.lease(1, deadline=1e12)
    assert lease.request.url == "http://a.test/a"
    [(sql, params)] = [(q, p) for q, p in noted.seen if q.lstrip().startswith("SELECT")]
    assert f"u.status = {sqliteschema.QUEUED} AND" in sql
    assert len(params) == 2  # the origin and the limit: no status bound
    assert "url_queued" in " ".join(
        str(row) for row in noted.db.execute("EXPLAIN QUERY PLAN " + sql, params)
    )
    state._db = noted.db
    state.close()


def test_a_held_lock_is_kept_by_a_look_and_released_by_the_crawls_state(path):
    hold_lock(path)  # the crawl command's check
    SQLiteState(path, release_leases=False).close()  # its look at the state
    with pytest.raises(StateLockedError):
        sqlitelock.acquire(path)  # another crawl: refused
    crawl = SQLiteState(path)  # the crawl's own state takes the lock over
    assert os.path.abspath(path) not in sqlitelock.HELD
    crawl.close()  # and releases it: no lock file left open
    SQLiteState(path).close()


def test_a_lock_kept_at_close_goes_to_the_state_opened_next(path):
    first = SQLiteState(path)
    first.close(keep_lock=True)
    with pytest.raises(StateLockedError):
        sqlitelock.acquire(path)  # still held: no other crawl in between
    SQLiteState(path, fresh=True).close()
    assert os.path.abspath(path) not in sqlitelock.HELD
    SQLiteState(path).close()


def test_a_filter_that_holds_every_tag_drops_no_url(path, monkeypatch):
    # every key's tag alike, and fingerprints colliding: the file decides
    monkeypatch.setattr(keyfilter, "hash", lambda key: 5, raising=False)
    same_fingerprints(monkeypatch, len)
    state = SQLiteState(path)
    state.add([req("aa"), req("bb"), req("c")])
    state.defer([req("dd")])
    keys = ["http://a.test/" + k for k in ["aa", "bb", "cc", "c", "d", "dd", "aa"]]
    expected = [True, True, False, True, False, False, True]
    assert state.contains_many(keys) == expected
    state._confirmed.clear()
    assert [key in state for key in keys] == expected
    assert state.add([req("cc"), req("aa"), req("dd")]) == [True, False, True]
    state.close()
    state = SQLiteState(path)  # the filter rebuilt from the file
    assert state.contains_many(keys) == [True, True, True, True, False, True, True]
    state.close()


class NoFile:
    def execute(self, *args: object) -> None:
        raise AssertionError("the file was read")


def test_new_links_are_answered_without_the_file(path):
    state = SQLiteState(path)
    state.add([req(f"seen/{i}") for i in range(1000)])
    state.commit()
    new = [f"http://a.test/new/{i}" for i in range(1000)]
    # (but for a tag shared by chance: about 1,000 in 2**32 a key)
    new = [key for key in new if key not in state._filter]
    assert len(new) > 990
    db, state._db = state._db, NoFile()
    try:
        answers = state.contains_many(new)
    finally:
        state._db = db
    assert answers == [False] * len(new)
    # and the ones seen are confirmed against it
    assert (
        state.contains_many([f"http://a.test/seen/{i}" for i in range(9)]) == [True] * 9
    )
    state.close()


def test_a_link_with_its_referer_header_is_stored_as_a_code(path):
    # nearly every queued link: a GET whose Referer header is the page it
    # was found on (leased while its links are added); its extra column is
    # one character, and it comes back as the same request
    spider = Spider("s")
    page = "http://a.test/"
    state = SQLiteState(path)
    state.add([StoredRequest(key=page, url=page)])
    [_] = state.lease(1, deadline=1e12)
    link = Request("http://a.test/x", headers={"Referer": page})
    link.meta.update({META_REFERER: page, META_LINK_KIND: "page", "depth": 1})
    stored = to_stored(link, link.url, spider)
    assert stored is not None
    other = StoredRequest(key="http://a.test/y", url="http://a.test/y", meta={"k": 1})
    state.add([stored, other])
    state.commit()
    db = sqlite3.connect(path)
    extras = dict(db.execute("SELECT key, extra FROM url WHERE status = 1"))
    db.close()
    # (the key without its origin's name, which the origin column gives)
    assert extras == {"/x": "1", "/y": '{"meta":{"k":1}}'}
    leased = {
        lease.request.key: lease.request
        for lease in state.lease(2, deadline=1e12, strict=False)
    }
    state.close()
    assert leased["http://a.test/y"].meta == {"k": 1}
    back = from_stored(leased["http://a.test/x"], spider)
    assert back.headers.get("Referer") == page.encode()
    assert back.meta[META_REFERER] == page
    assert back.meta[META_LINK_KIND] == "page"
    assert to_stored(back, back.url, spider) == stored


def test_records_read_cache_agrees_with_the_file(path, monkeypatch):
    # every operation in a random order, with a cache small enough to be
    # emptied often; each read is checked against a dict and against a
    # second connection reading the file (what a resumed crawl would see)
    monkeypatch.setattr(sqliterecords, "CACHE_MAX", 8)
    # known keys held at first (the namespace is new), dropped past 20
    monkeypatch.setattr(sqliterecords, "KNOWN_MAX", 20)
    # puts held a few at a time (written behind, and at every other op)
    monkeypatch.setattr(sqliterecords, "PUTS_HELD", 5)
    state = SQLiteState(path)
    records = state.records("ns")
    model: dict[str, object] = {}
    rng = random.Random(14)
    keys = [f"http://a.test/{i}" for i in range(40)]
    for step in range(3000):
        op = rng.randrange(11)
        if op == 9:
            assert dict(records.items()) == model
            continue
        if op == 10:
            assert records.count() == len(model)
            continue
        key = rng.choice(keys)
        if op == 0:
            records.put(key, {"v": step})
            model[key] = {"v": step}
        elif op == 1:
            items = [(k, step) for k in rng.sample(keys, 5)]
            records.put_many(items)
            model.update(items)
        elif op == 2:
            assert records.put_new(key, step) == (key not in model)
            model.setdefault(key, step)
        elif op == 3:
            if not isinstance(model.get(key, 0), int):
                continue
            model[key] = int(model.get(key, 0)) + 2  # type: ignore[call-overload]
            assert records.incr(key, 2) == model[key]
        elif op == 4:
            gone = rng.sample(keys, 3)
            records.delete(gone)
            for k in gone:
                model.pop(k, None)
        elif op == 5 and step % 50 == 0:
            prefix = f"http://a.test/{rng.randrange(4)}"
            records.delete_prefix(prefix)
            model = {k: v for k, v in model.items() if not k.startswith(prefix)}
        elif op == 6:
            asked = [rng.choice(keys) for _ in range(rng.randrange(1, 20))]
            assert records.get_many(asked) == [model.get(k) for k in asked]
        else:
            got = records.get(key)
            assert got == model.get(key)
            if isinstance(got, dict):
                got["v"] = "changed by the caller"  # not seen by the next read
    state.commit()
    db = sqlite3.connect(path)
    on_file = {
        k: recordvalues.decode_value(v)
        for k, v in db.execute("SELECT substr(key, 2), value FROM record")
    }
    db.close()
    assert on_file == model
    assert records.get_many(keys) == [model.get(k) for k in keys]
    state.close()


def test_puts_are_written_behind_until_the_commit(path):
    state = SQLiteState(path)
    index = state.records("mirror.index")
    paths = state.records(NS_PATHS)  # hashed: a table of its own
    state.commit()
    statements: list[str] = []
    state._db.set_trace_callback(statements.append)
    for i in range(20):
        index.put(f"http://a.test/{i}", ["h", i])
    paths.put("AAAAAAAAAAAA", "x")
    assert not any("INSERT" in sql for sql in statements)
    # read back while held, from the memory or from what is held
    index._young.clear()
    index._old.clear()
    assert index.get("http://a.test/3") == ["h", 3]
    assert index.get_many(["http://a.test/4", "http://a.test/x"]) == [["h", 4], None]
    assert not paths.put_new("AAAAAAAAAAAA", "y")  # held: taken already
    state.commit()
    state._db.set_trace_callback(None)
    inserts = [sql for sql in statements if "INSERT OR REPLACE" in sql]
    assert len(inserts) == 21  # at the commit (the trace shows each row)
    db = sqlite3.connect(path)
    (n,) = db.execute("SELECT COUNT(*) FROM record").fetchone()
    (m,) = db.execute("SELECT COUNT(*) FROM hashed_mirror_paths").fetchone()
    db.close()
    assert (n, m) == (20, 1)
    # what is held when the state is abandoned (a kill) is not on file
    index.put("http://a.test/late", ["h", 99])
    state.abandon()
    again = SQLiteState(path)
    assert again.records("mirror.index").get("http://a.test/late") is None
    assert again.records("mirror.index").get("http://a.test/19") == ["h", 19]
    again.close()


def test_records_repeated_links_are_read_from_the_file_once(path, monkeypatch):
    monkeypatch.setattr(sqliterecords, "KNOWN_MAX", 0)  # the cache alone
    state = SQLiteState(path)
    records = state.records("mirror.index")
    records.put_many(
        [(f"http://a.test/nav{i}", {"p": f"nav{i}.html"}) for i in range(50)]
    )
    state.commit()
    selects: list[str] = []
    state._db.set_trace_callback(
        lambda sql: selects.append(sql) if sql.startswith("SELECT") else None
    )
    nav = [f"http://a.test/nav{i}" for i in range(50)]
    for page in range(20):  # every page links to the same navigation
        links = [*nav, f"http://a.test/new{page}"]
        got = records.get_many(links)
        assert got[0] == {"p": "nav0.html"}
        assert got[-1] is None
    state._db.set_trace_callback(None)
    assert len(selects) == 20  # one query a page, for its one new link
    # the navigation is read with the first page only
    assert [sql.count("/nav") for sql in selects] == [50] + [0] * 19
    state.close()


def test_records_are_read_in_steps_proportional_to_their_number(path):
    """Each page of ``items`` seeks past the last key read: the next page's
    query read every row from the namespace's start again (two lower bounds
    on the key, of which SQLite seeks by one), quadratic in the rows."""
    state = SQLiteState(path)
    state.records("before").put_many((f"k{i:05d}", i) for i in range(3000))

    def read(rows: int) -> int:
        records = state.records(f"n{rows}")
        records.put_many((f"k{i:05d}", i) for i in range(rows))
        state.commit()
        counted = [0]

        def count() -> int:
            counted[0] += 1
            return 0

        state._db.set_progress_handler(count, 100)
        assert [v for _, v in records.items("k")] == list(range(rows))
        state._db.set_progress_handler(None, 0)
        return counted[0]

    pages = 16 * sqliterecords._PAGE
    steps = [read(pages), read(2 * pages)]
    # linear: twice the rows, twice the steps (4x when quadratic)
    assert steps[1] < 2.5 * steps[0], steps
    state.close()


def test_records_of_a_small_namespace_answer_absent_keys_without_a_query(path):
    state = SQLiteState(path)
    state.records("mirror.alias").put("http://a.test/old", "http://a.test/new")
    state.commit()
    state.close()
    state = SQLiteState(path)  # opened again: its keys are read once
    records = state.records("mirror.alias")
    selects: list[str] = []
    state._db.set_trace_callback(
        lambda sql: selects.append(sql) if sql.startswith("SELECT") else None
    )
    links = [f"http://a.test/{i}" for i in range(30)]
    assert records.get_many(links) == [None] * 30
    assert records.get("http://a.test/other") is None
    assert selects == []
    assert records.get_many(["http://a.test/old"]) == ["http://a.test/new"]
    assert len(selects) == 1
    records.put("http://a.test/3", "http://a.test/three")
    records.delete_prefix("http://a.test/o")
    assert records.get_many(["http://a.test/3", "http://a.test/old"]) == [
        "http://a.test/three",
        None,
    ]
    state.close()


def test_records_past_the_known_keys_bound_ask_the_file(path, monkeypatch):
    monkeypatch.setattr(sqliterecords, "KNOWN_MAX", 4)
    monkeypatch.setattr(sqliterecords, "CACHE_MAX", 2)
    state = SQLiteState(path)
    records = state.records("ns")
    records.put_many([(f"k{i}", i) for i in range(10)])
    state.commit()
    state.close()
    state = SQLiteState(path)  # too many keys to hold: every read asks
    records = state.records("ns")
    assert records.get_many([f"k{i}" for i in range(12)]) == [*range(10), None, None]
    assert [records.get(f"k{i}") for i in (9, 10)] == [9, None]
    state.close()


@pytest.mark.parametrize(
    "value",
    [
        "text",
        "",
        "1",
        '"quoted"',
        "null",
        "[1]",
        "caf\u00e9 \ud800",
        7,
        -3,
        True,
        2.5,
        {"a": "b"},
        ["t", "img"],
        ["h", 3012, None, {"x": [1.5, -2]}, "caf\u00e9"],
        2**70,
    ],
)
def test_records_keep_a_value_as_it_was_put(path, value):
    state = SQLiteState(path)
    state.records("ns").put("k", value)
    state.commit()
    state.close()
    state = SQLiteState(path)
    got = state.records("ns").get("k")
    assert got == value and type(got) is type(value)
    state.close()


@pytest.mark.parametrize("text", [' [1, "a"]', '[1, "a"] ', '{"k": [1, "a"]}'])
def test_records_read_json_text_with_spaces(path, text):
    # read by the JSON scanner alone when written without spaces around it;
    # anything else by json.loads
    state = SQLiteState(path)
    records = state.records("ns")
    state._db.execute(
        "INSERT INTO record (key, value) VALUES (?, ?)", (records._ns + "k", text)
    )
    state.commit()
    state.close()
    state = SQLiteState(path)
    assert state.records("ns").get("k") == json.loads(text)
    state.close()


def test_records_read_strings_a_state_wrote_as_json(path):
    # states written before strings were stored as BLOBs
    state = SQLiteState(path)
    records = state.records("ns")
    state._db.execute(
        "INSERT INTO record (key, value) VALUES (?, ?)",
        (records._ns + "k", json.dumps("old text")),
    )
    state.commit()
    state.close()
    state = SQLiteState(path)
    assert state.records("ns").get("k") == "old text"
    assert list(state.records("ns").items()) == [("k", "old text")]
    state.close()


def test_namespaces_keyed_by_hashes_are_the_features_own():
    # the frontier names them (it sits below the features that own them)
    assert set(sqlitehashed.HASHED) == {
        NS_PATHS,
        NS_PAGES,
        NS_CONTENT,
        NS_LINKS,
        NS_CODES,
    }


def test_keys_of_hashes_are_stored_as_their_bytes_in_tables_of_their_own(path):
    state = SQLiteState(path)
    urls = [f"http://a.test/{i}" for i in range(50)]
    codes = UrlCodes.of(state).give(urls)
    ids = [url_id(url) for url in urls]
    state.records("reports.link_states").put_many([(i, 1) for i in ids])
    content = _content_key("exact", "ab" * 32)
    state.records("reports.content").put(content, codes[urls[0]])
    state.commit()
    db = sqlite3.connect(path)
    try:
        # nothing of theirs in the shared table (the codes' sites are there)
        names = db.execute(
            "SELECT DISTINCT n.name FROM record r"
            " JOIN namespace n ON n.id = unicode(r.key)"
        ).fetchall()
        assert names == [("urls.sites",)]
        for table, length, rows in [
            ("hashed_urls_codes", 3, 50),  # 4 characters of base64
            ("hashed_reports_link_states", 9, 50),  # 12
            ("hashed_reports_content", 13, 1),  # the kind's initial and 16
        ]:
            found = db.execute(
                f"SELECT typeof(key), length(key), COUNT(*) FROM {table} GROUP BY 1, 2"
            ).fetchall()
            assert found == [("blob", length, rows)], table
        assert db.execute("SELECT key FROM hashed_reports_content").fetchone() == (
            b"e" + bytes.fromhex("ab" * 12),
        )
    finally:
        db.close()
    state.close()
    again = SQLiteState(path)
    assert UrlCodes.of(again).find(urls) == codes
    assert again.records("reports.link_states").get_many(ids) == [1] * 50
    assert again.records("reports.content").get(content) == codes[urls[0]]
    with pytest.raises(ValueError, match="no prefix"):
        list(again.records("urls.codes").items("A"))
    with pytest.raises(ValueError, match="no flagged"):
        again.records("urls.codes").flag_many([("AAAA", 1, None)])
    again.close()


def test_in_lists_come_in_few_lengths():
    # one prepared statement per text: ten texts, not one per length
    assert sqliterecords.in_marks([7]) == ("?", [7])
    assert sqliterecords.in_marks([1, 2, 3]) == ("?,?,?,?", [1, 2, 3, None])
    texts = {sqliterecords.in_marks(list(range(n)))[0] for n in range(1, 501)}
    assert len(texts) == 10


def test_lookups_of_every_length_find_what_was_seen(path):
    state = SQLiteState(path)
    state.add([req(f"p{i}") for i in range(0, 600, 2)])
    state.commit()
    state.close()
    state = SQLiteState(path)  # the filter's hits confirmed by the file
    for n in (1, 2, 3, 5, 17, 300, 599):
        keys = [f"http://a.test/p{i}" for i in range(n)]
        assert state.contains_many(keys) == [i % 2 == 0 for i in range(n)]
    state.close()


def test_waiting_links_are_packed_in_chunks_by_target(path):
    """links.waiting (format 6): a target's links share a row (a chunk), a
    4-character URL code is 3 bytes, the links come back in their keys'
    order, and what the packed form does not hold (other codes, long or
    odd texts, other flags) round-trips."""
    rng = random.Random(6)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    codes = ["----", "____", "AAAA", "zzzz", "0-_a"]
    codes += ["".join(rng.choice(alphabet) for _ in range(4)) for _ in range(300)]
    codes = sorted(set(codes))
    state = SQLiteState(path)
    try:
        waiting = state.records("links.waiting")
        rows = [
            (f"{t}\n{p}", bits, text)
            for t, p, bits, text in [
                (rng.choice(codes), rng.choice(codes), bits, None if bits == 1 else "x")
                for bits in [rng.choice((1, 2, 3)) for _ in range(2000)]
            ]
        ]
        waiting.flag_many(rows)
        odd = [
            ("AAAAA\nBBBB", 2, "a 5-character code"),  # a TEXT code
            ("AAA+\nBBBB", 2, "not a code character"),
            ("\u00e9\u00e9\u00e9\u00e9\nBBBB", 2, "not ASCII"),
            ("CCCC\nDDDD", 2, "lone \udc80 surrogate"),
            ("CCCC\nEEEE", 1, "the mirror's bit with a text"),
            ("CCCC\nFFFF", 3, ""),
            ("CCCC\nGGGG", 2, ""),
            ("CCCC\nHHHH", 5, "bits 1 and 4"),
            ("CCCC\nJJJJ", 2, "a long text " * 40),
            ("CCCC\nMMMMM", 3, "a 5-character page code"),
        ]
        odd += [(f"KKKK\n{code}", 3, "link 12") for code in codes[:150]]
        waiting.flag_many(odd)
        state.commit()
        expected: dict[str, str] = {}
        for key, bits, text in rows + odd:
            old = expected.get(key)
            kept = flag_text(old) if old else ""
            expected[key] = flagged(
                bits | (flags_of(old) if old else 0), kept if text is None else text
            )
        got = list(waiting.items())
        assert dict(got) == expected
        # the key order, except that a code kept as TEXT sorts first
        assert [k for k, _ in got] == sorted(expected, key=_stored_order)
        assert waiting.get("CCCC\nDDDD") == flagged(2, "lone \udc80 surrogate")
        db = state._db
        # a link is its page's 3 bytes, a byte and its text; the target and
        # the row's overhead are a chunk's, shared by its links
        stored = db.execute(
            "SELECT typeof(target), target, first, flags, links FROM waiting"
        ).fetchall()
        assert {kind for kind, *_ in stored} == {"blob", "text"}
        assert sum(kind == "text" for kind, *_ in stored) == 3  # AAAAA, AAA+, éééé
        links_of = {
            (target, first): waitingchunks.decode_links(data)
            for _, target, first, _, data in stored
        }
        firsts = {}  # a target's first chunk holds the pages below its first
        for _, target, first, *_ in stored:
            firsts.setdefault(target, first)
        for (_, target, first, flags, data), links in zip(
            stored, links_of.values(), strict=True
        ):
            assert len(data) <= sqlitewaiting.CHUNK_BYTES or len(links) == 1
            union = 0
            for page, (bits, _text) in links.items():
                union |= bits
                if first != firsts[target]:
                    assert waitingchunks.code_order(page) >= waitingchunks.code_order(
                        first
                    )
            assert flags == union
        n_links = sum(len(v) for v in links_of.values())
        assert n_links == len(expected)
        assert len(stored) < n_links / 4  # chunks: a target's links share a row
        payload = sum(len(data) for *_, data in stored)
        texts_bytes = sum(
            len(flag_text(v).encode("utf-8", "surrogatepass"))
            for v in expected.values()
        )
        # 4 bytes a link and its text (a longer text's length takes a byte
        # or two more)
        assert payload <= 4 * n_links + texts_bytes + 2 * sum(
            len(flag_text(v)) >= 7 for v in expected.values()
        )
        assert len(links_of) > len({target for _, target, *_ in stored})  # split
        # a range cleared keeps what the other feature needs
        waiting.unflag_prefix("CCCC\n", 1)
        assert waiting.get("CCCC\nEEEE") is None
        assert waiting.get("CCCC\nFFFF") == flagged(2, "")
        assert waiting.get("CCCC\nHHHH") == flagged(4, "bits 1 and 4")
        waiting.unflag_prefix("CCCC\n", 2)
        assert list(waiting.items("CCCC\n")) == [
            ("CCCC\nHHHH", flagged(4, "bits 1 and 4"))
        ]
        with pytest.raises(ValueError, match="<target>"):
            waiting.count("CCCC")
        with pytest.raises(ValueError, match="flagged records only"):
            waiting.put("CCCC\nIIII", {"a": 1})
    finally:
        state.close()


def test_a_cleared_range_is_kept_in_its_chunks_cleared_bits(path):
    """A target's range cleared (format 8) touches no chunk's bytes: the bits
    go to the chunk's ``cleared`` and apply when it is read; a link appended
    with bits the column would clear, or with no text (a page the clear
    dropped would lend it its text), applies them to the bytes first."""
    state = SQLiteState(path)
    try:
        waiting = state.records("links.waiting")
        db = state._db
        waiting.flag_many(
            [("AAAA\nBBBB", 1, "b"), ("AAAA\nCCCC", 3, "c"), ("AAAA\nDDDD", 2, "d")]
        )
        state.commit()
        (before,) = db.execute("SELECT links FROM waiting").fetchall()
        waiting.unflag_prefixes(["AAAA\n"], 1)
        rows = db.execute("SELECT flags, cleared, links FROM waiting").fetchall()
        assert rows == [(2, 1, before[0])]  # no byte rewritten
        assert dict(waiting.items()) == {
            "AAAA\nCCCC": flagged(2, "c"),
            "AAAA\nDDDD": flagged(2, "d"),
        }
        assert waiting.get("AAAA\nBBBB") is None
        # the reports' bit with a text: appended, the column kept
        waiting.flag_many([("AAAA\nBBBB", 2, "b2")])
        waiting.write_flags()
        assert db.execute("SELECT cleared FROM waiting").fetchall() == [(1,)]
        assert waiting.get("AAAA\nBBBB") == flagged(2, "b2")
        # the mirror's bit (no text), which the column would clear
        waiting.flag_many([("AAAA\nDDDD", 1, None)])
        waiting.write_flags()
        ((cleared, links),) = db.execute("SELECT cleared, links FROM waiting")
        assert cleared == 0
        assert dict(waiting.items()) == {
            "AAAA\nBBBB": flagged(2, "b2"),
            "AAAA\nCCCC": flagged(2, "c"),
            "AAAA\nDDDD": flagged(3, "d"),
        }
        # the dead link's bytes (BBBB with bit 1, text "b") are gone
        assert links.count(b"b") == 1
        # a page's link dropped by the column, appended again with no text
        waiting.unflag_prefixes(["AAAA\n"], 2)
        waiting.flag_many([("AAAA\nCCCC", 1, None)])
        assert waiting.get("AAAA\nCCCC") == flagged(1, "")
        assert waiting.get("AAAA\nDDDD") == flagged(1, "d")
    finally:
        state.close()


def test_a_range_cleared_writes_the_held_rows_of_its_groups_only(path):
    """links.waiting: ``unflag_prefixes`` of groups of several lengths (a
    code of 4 characters, of 5: a longer code shares its first 4) writes
    the held rows of exactly those groups, and clears them; a group's key
    that is another's prefix does not take the other's rows."""
    state = SQLiteState(path)
    try:
        waiting = state.records("links.waiting")
        rows = [
            ("AAAA\nBBBB", 1, None),
            ("AAAAB\nBBBB", 3, "x"),
            ("AAAAC\nCCCC", 1, None),
            ("AAA\nBBBB", 1, None),
            ("DDDD\nBBBB", 1, None),
        ]
        for within in (["AAAA\n"], ["AAAAB\n", "AAA\n"]):
            waiting.flag_many(rows)
            waiting.unflag_prefixes(within, 1)
            held = {key for key, _, _ in rows} - {
                key for key, _, _ in rows if key.partition("\n")[0] + "\n" in within
            }
            assert set(waiting._flags) == held
            state.commit()
            answer = dict(waiting.items())
            for key, bits, _text in rows:
                if key.partition("\n")[0] + "\n" in within:
                    assert flags_of(answer.get(key)) == bits & ~1
            waiting.unflag_prefix("", 3)
    finally:
        state.close()


def test_a_read_of_waiting_links_writes_the_held_rows_of_its_targets_only(path):
    """links.waiting: ``get_many`` writes the held rows of its keys' targets
    (the only ones it could see) and answers from them; another target's
    stay held for the commit, where the other feature's flag of the same
    row joins them: one link appended, with both bits."""
    state = SQLiteState(path)
    try:
        waiting = state.records("links.waiting")
        db = state._db
        waiting.flag_many([("AAAA\nBBBB", 1, "b")])
        state.commit()
        waiting.flag_many([("AAAA\nCCCC", 2, "c"), ("DDDD\nBBBB", 2, "d")])
        assert waiting.get_many(["AAAA\nBBBB", "AAAA\nCCCC", "none"]) == [
            flagged(1, "b"),
            flagged(2, "c"),
            None,
        ]
        targets = db.execute("SELECT target FROM waiting").fetchall()
        assert len(targets) == 1  # DDDD's row is held still
        waiting.flag_many([("DDDD\nBBBB", 1, None)])
        state.commit()
        rows = dict(db.execute("SELECT target, links FROM waiting").fetchall())
        assert len(rows) == 2
        (appended,) = [
            links for target, links in rows.items() if target != targets[0][0]
        ]
        assert appended.count(b"d") == 1  # one link: both bits, one text
        assert waiting.get("DDDD\nBBBB") == flagged(3, "d")
    finally:
        state.close()


def test_a_repeated_text_is_kept_once(path):
    """links.waiting (format 10): a text met again is kept once in
    ``waiting_text`` and its links hold its id (one byte below 64, two
    after); a text met once, or shorter than INTERN_FROM, stays in its
    link. Read back the same after the state is opened again (the texts'
    memory gone), also by links written after that."""
    long_text = "A navigation link's text"
    state = SQLiteState(path)
    try:
        waiting = state.records("links.waiting")
        db = state._db
        rows = [(f"AAAA\n{_code(i)}", 2, long_text) for i in range(20)]
        rows += [(f"BBBB\n{_code(i)}", 2, f"only once {i}") for i in range(20)]
        rows += [(f"CCCC\n{_code(i)}", 3, "ab") for i in range(20)]  # short
        # 100 texts, each on two links: ids past 63
        rows += [
            (f"{target}\n{_code(i)}", 2, f"text number {i}")
            for target in ("DDDD", "EEEE")
            for i in range(100)
        ]
        rows += [(f"FFFF\n{_code(i)}", 1, None) for i in range(20)]  # no text
        waiting.flag_many(rows)
        state.commit()
        texts = [
            bytes(t).decode() for (t,) in db.execute("SELECT text FROM waiting_text")
        ]
        assert sorted(texts) == sorted(
            [long_text, *(f"text number {i}" for i in range(100))]
        )
        stored: dict[str, bytes] = {}
        for target, links in db.execute(
            "SELECT target, links FROM waiting ORDER BY target, first"
        ):
            code = waitingchunks.unpack_code(target)
            stored[code] = stored.get(code, b"") + links
        # once inline (met the first time: a byte, the page, the length, the
        # text), then 5 bytes a link: a byte, the page, the id (1)
        assert stored["AAAA"].count(long_text.encode()) == 1
        assert len(stored["AAAA"]) == 5 + len(long_text) + 19 * 5
        assert all(f"only once {i}".encode() in stored["BBBB"] for i in range(20))
        assert stored["CCCC"].count(b"ab") == 20
        # the second of each pair: its id (2-101), 2 bytes past 63
        assert len(stored["EEEE"]) == sum(5 if i < 64 else 6 for i in range(2, 102))
        expected = {key: flagged(bits, text or "") for key, bits, text in rows}
        assert dict(waiting.items()) == expected
        state.close()
        state = SQLiteState(path)
        waiting = state.records("links.waiting")
        assert dict(waiting.items()) == expected
        assert waiting.get("EEEE\n" + _code(99)) == flagged(2, "text number 99")
        more = [(f"GGGG\n{_code(i)}", 2, long_text) for i in range(3)]
        waiting.flag_many(more)
        state.commit()
        expected.update((key, flagged(bits, text)) for key, bits, text in more)
        assert dict(waiting.items()) == expected
        # a new crawl on the state: the texts go with the links
        waiting.clear()
        waiting.flag_many(more)
        state.commit()
        assert dict(waiting.items()) == {k: flagged(2, long_text) for k, _, _ in more}
        [(n,)] = state._db.execute("SELECT count(*) FROM waiting_text")
        assert n == 1
    finally:
        state.close()


def test_a_missing_kept_text_is_a_damaged_state(path):
    """A waiting link that names a text ``waiting_text`` lacks (only a
    damaged file can: both are written in one transaction) is a damaged
    state naming the file, never read as an empty text."""
    text = "A navigation link's text"
    state = SQLiteState(path)
    try:
        waiting = state.records("links.waiting")
        waiting.flag_many([(f"AAAA\n{_code(i)}", 2, text) for i in range(3)])
        state.commit()
        state._db.execute("DELETE FROM waiting_text")
        state.commit()
    finally:
        state.close()
    state = SQLiteState(path)
    try:
        waiting = state.records("links.waiting")
        assert waiting.get("AAAA\n" + _code(0)) == flagged(2, text)  # inline
        with pytest.raises(StateError) as raised:
            waiting.get("AAAA\n" + _code(1))
        # the crawl that meets it stops, in one line naming the file and
        # what to do (webspider.storage: tests/test_e2e_state_damaged.py)
        message = str(raised.value)
        assert message == f"{path}: a waiting link names text 1, which is missing"
        assert damaged_state(raised.value)
        with pytest.raises(StateError):
            dict(waiting.items())
    finally:
        state.close()


def _code(i: int) -> str:
    """A 4-character URL code of ``i`` (in order)."""
    alphabet = waitingchunks.CODE_CHARS
    return "AA" + alphabet[i // 64] + alphabet[i % 64]


def _stored_order(key: str) -> tuple[bool, str, bool, str]:
    target, _, page = key.partition("\n")
    return _packed(target), target, _packed(page), page


def _packed(code: str) -> bool:
    return not isinstance(waitingchunks.pack_code(code), str)


@pytest.mark.parametrize("seed", range(4))
def test_waiting_links_chunks_agree_with_a_dict(path, monkeypatch, seed):
    """SQLiteWaiting against MemoryRecords on random work (chunks kept
    small: split often, links below a target's first chunk, pages flagged
    again, ranges and keys cleared, links appended to a range just cleared
    — the chunks' cleared bits — with and without text, over the pages it
    held): the same records, in the same order."""
    monkeypatch.setattr(sqlitewaiting, "CHUNK_BYTES", 40)
    # the texts' memory turned over often: a text kept once, met again
    # after it is forgotten, is kept once more (a second id, both read)
    monkeypatch.setattr(sqlitewaiting, "TEXTS_KEPT", 8)
    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    codes = ["".join(rng.choice(alphabet) for _ in range(4)) for _ in range(60)]
    codes += ["AAAAA", "x"]  # kept as TEXT
    targets = codes[:12]
    state = SQLiteState(path)
    try:
        waiting = state.records("links.waiting")
        model = MemoryRecords()
        for step in range(600):
            action = rng.random()
            if action < 0.5:
                rows = [
                    (
                        f"{rng.choice(targets)}\n{rng.choice(codes)}",
                        rng.choice((1, 2, 3, 4)),
                        rng.choice(
                            (
                                None,
                                "",
                                "t",
                                "text " * rng.randrange(1, 4),
                                f"text {rng.randrange(200)}",  # ids past 63
                            )
                        ),
                    )
                    for _ in range(rng.randrange(1, 30))
                ]
                for store in (waiting, model):
                    store.flag_many(rows)
            elif action < 0.62:
                groups = [f"{t}\n" for t in rng.sample(targets, 3)]
                bits = rng.choice((1, 2, 3, 4))
                for store in (waiting, model):
                    store.unflag_prefixes(groups, bits)
            elif action < 0.72:  # a range cleared, then links appended to it
                target = rng.choice(targets)
                held = [key for key, _ in model.items(f"{target}\n")]
                pages = [key.partition("\n")[2] for key in held] or codes
                if rng.random() < 0.5:
                    waiting.write_flags()  # else its held rows are written first
                bits = rng.choice((1, 2, 3, 4))
                for store in (waiting, model):
                    store.unflag_prefixes([f"{target}\n"], bits)
                rows = [
                    (
                        f"{target}\n{rng.choice(pages)}",
                        rng.choice((1, 2, 4, 6, bits)),
                        rng.choice((None, "", "u", "after " * rng.randrange(1, 3))),
                    )
                    for _ in range(rng.randrange(1, 8))
                ]
                for store in (waiting, model):
                    store.flag_many(rows)
                if rng.random() < 0.5:
                    keys = [f"{target}\n{page}" for page in pages]
                    assert waiting.get_many(keys) == model.get_many(keys)
            elif action < 0.74:
                bits = rng.choice((1, 2, 4))
                for store in (waiting, model):
                    store.unflag_prefix("", bits)
            elif action < 0.85:
                keys = [
                    f"{rng.choice(targets)}\n{rng.choice(codes)}" for _ in range(10)
                ]
                bits = rng.choice((1, 2, 4))
                for store in (waiting, model):
                    store.unflag(keys, bits)
            elif action < 0.9:
                state.commit()
            else:
                group = f"{rng.choice(targets)}\n"
                mine = list(waiting.items(group))
                assert mine == sorted(
                    model.items(group), key=lambda r: _stored_order(r[0])
                )
            if step % 50 == 49:
                got = list(waiting.items())
                assert dict(got) == dict(model.items())
                assert [k for k, _ in got] == sorted(dict(got), key=_stored_order)
        keys = [f"{t}\n{c}" for t in targets for c in codes[:20]]
        assert waiting.get_many(keys) == model.get_many(keys)
        assert waiting.count() == model.count()
    finally:
        state.close()
