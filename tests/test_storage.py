"""Which errors are writes the disk refused or a damaged crawl state
(webspider.storage), and the line that says so. The crawls that meet them: tests/test_e2e_write_failed.py."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from webspider.exceptions import CrawlStateError
from webspider.frontier.state import StateError, StateRefused
from webspider.mirror.safefs import UnsafePathError, refusal_error, refusal_json
from webspider.storage import CrawlStop, advice_for, damaged_state, failed_write


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        (errno.ENOSPC, "free space"),
        (errno.EDQUOT, "free space (or raise the quota)"),
        (errno.EFBIG, "raise the file-size limit (ulimit -f)"),
        (errno.EROFS, "make the file system writable"),
        (errno.EIO, "check the disk"),
    ],
)
def test_the_disk_refused(code, advice):
    assert advice_for(OSError(code, "x")) == advice


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.EACCES, "Permission denied"),
        OSError(errno.ENAMETOOLONG, "File name too long"),
        FileNotFoundError(errno.ENOENT, "No such file or directory"),
        UnsafePathError("unsafe path segment '..'"),
        OSError("no errno"),
        ValueError("not an OSError"),
        sqlite3.OperationalError("no such table: x"),
    ],
)
def test_not_the_disk(error):
    assert not failed_write(error)


def _sqlite_error(code: int) -> sqlite3.Error:
    error = sqlite3.OperationalError("x")
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


def test_sqlite_full_and_write_errors_are_the_disk_reads_are_not():
    assert failed_write(_sqlite_error(13))  # SQLITE_FULL
    assert failed_write(_sqlite_error(10))  # SQLITE_IOERR
    assert failed_write(_sqlite_error(10 | 3 << 8))  # SQLITE_IOERR_WRITE
    assert failed_write(_sqlite_error(10 | 4 << 8))  # SQLITE_IOERR_FSYNC
    # a truncated file, refused as a damaged state (not a full disk)
    assert not failed_write(_sqlite_error(10 | 1 << 8))  # SQLITE_IOERR_READ
    assert not failed_write(_sqlite_error(10 | 2 << 8))  # SQLITE_IOERR_SHORT_READ
    assert not failed_write(_sqlite_error(11))  # SQLITE_CORRUPT


def test_a_real_sqlite_full_error(tmp_path: Path):
    db = sqlite3.connect(tmp_path / "x.sqlite3")
    db.execute("CREATE TABLE t (v BLOB)")
    db.execute("PRAGMA max_page_count = 4")  # "database or disk is full"
    with pytest.raises(sqlite3.Error) as raised:
        db.execute("INSERT INTO t VALUES (zeroblob(100000))")
    db.close()
    assert failed_write(raised.value)


def test_the_line():
    failure = CrawlStop("out/pages.jsonl", "No space left on device", "free space")
    assert failure.line() == (
        "cannot write out/pages.jsonl: No space left on device; the crawl is not "
        "finished: free space and run the same command again to continue it"
    )


def test_a_page_workers_refusal_keeps_its_errno_and_file():
    error = refusal_error(refusal_json(OSError(errno.ENOSPC, "No space", "/m/a.html")))
    assert (error.errno, error.strerror, error.filename) == (
        errno.ENOSPC,
        "No space",
        "/m/a.html",
    )
    assert failed_write(error)
    unsafe = refusal_error(refusal_json(UnsafePathError("unsafe path segment '..'")))
    assert isinstance(unsafe, UnsafePathError)
    assert not failed_write(unsafe)


def test_a_damaged_state_is_not_a_write_the_disk_refused():
    assert damaged_state(_sqlite_error(11))  # SQLITE_CORRUPT
    assert damaged_state(_sqlite_error(11 | 1 << 8))  # SQLITE_CORRUPT_VTAB
    assert damaged_state(_sqlite_error(26))  # SQLITE_NOTADB
    assert damaged_state(_sqlite_error(10 | 2 << 8))  # SQLITE_IOERR_SHORT_READ
    assert damaged_state(StateError("x: a waiting link names text 3, which is missing"))
    assert damaged_state(CrawlStateError("x"))
    for not_damaged in (
        _sqlite_error(13),  # full
        _sqlite_error(10 | 3 << 8),  # a write
        sqlite3.OperationalError("no such table: x"),  # no code: not SQLite's
        OSError(errno.ENOSPC, "No space left on device"),
        ValueError("x"),
    ):
        assert not damaged_state(not_damaged)
    # a Redis that refused a write: the state is sound, the crawl resumable
    refused = StateRefused("redis://h (crawl c): OutOfMemoryError: x", "see it")
    assert not damaged_state(refused)
    assert advice_for(refused) == "see it"


def test_a_real_corrupt_file(tmp_path: Path):
    path = tmp_path / "x.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (v BLOB)")
    db.execute("INSERT INTO t VALUES (zeroblob(10000))")
    db.commit()
    db.close()
    with path.open("r+b") as f:
        f.seek(4096)
        f.write(b"\xff" * 4096)
    db = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError) as raised:
        db.execute("SELECT length(v) FROM t").fetchall()
    db.close()
    assert damaged_state(raised.value)
    assert not failed_write(raised.value)


def test_the_damaged_line():
    stop = CrawlStop(
        "out/.webspider-state.sqlite3",
        "database disk image is malformed",
        "start over with -a restart=1, or restore the file from a copy",
        damaged=True,
    )
    assert stop.reason == "state_damaged"
    assert stop.line() == (
        "damaged crawl state out/.webspider-state.sqlite3: database disk image is "
        "malformed; the crawl is not finished and cannot be continued: start over "
        "with -a restart=1, or restore the file from a copy"
    )
