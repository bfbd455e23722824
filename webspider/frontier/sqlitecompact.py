"""The end of a finished crawl's state: ``compact`` replaces the file with
a copy of its metadata alone (the rest is never read again).

Apart from webspider.frontier.sqlite because it runs once, at the close of
a finished crawl, on the file as a whole (a new file renamed into place),
not on the state a crawl reads and writes.

Pure: standard library only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from typing import TYPE_CHECKING

from webspider.frontier.sqliterecords import SCHEMA as RECORDS_SCHEMA
from webspider.frontier.sqliteschema import INDEXES, TABLES
from webspider.utils.atomic import fsync_folder

if TYPE_CHECKING:
    from pathlib import Path

logger = logging.getLogger(__name__)


def compact(db: sqlite3.Connection, path: Path) -> None:
    """Give back the space of a crawl that finished (its flag committed).

    Nothing reads a finished state again but its metadata: the next run
    of the command starts a fresh state (resume.open_crawl_state, which
    reads the run's number), and the features wrote what their records
    held to their output files (mirror-state.jsonl, broken-links.jsonl,
    deferred.jsonl, the report) before the flag was set; the pages are
    in pages.jsonl. So only the metadata is copied into a new file (of
    the same schema, its tables otherwise empty), which replaces the
    state: a few KiB, whatever the crawl's size. The queue's rows were
    copied too until 2026-12-03 (53 B/URL kept that nothing read): the
    copy then had the file at its largest and the rows' copy on disk at
    once, which made the end of the crawl the state's peak on disk (~60
    B/URL above the crawl's at a million pages). Not ``DELETE`` and
    VACUUM in place: in WAL mode the delete wrote every page of the
    records to the log (bench/README.md, "The state's peak"), and an
    incremental vacuum of the dropped tables' pages took ~O(n²) (65 s at
    300,000 URLs, 2026-12-03). A kill during any step leaves a finished
    state, the old file or the new one (``os.replace``).

    ``db`` is the state's connection, closed here."""
    tmp = path.with_name(path.name + ".new")
    try:
        tmp.unlink(missing_ok=True)
        (page_size,) = db.execute("PRAGMA page_size").fetchone()
        fresh = sqlite3.connect(str(tmp))
        try:
            fresh.execute(f"PRAGMA page_size={int(page_size)}")
            # one transaction, as in sqliteschema.create (fsynced once, below)
            fresh.executescript("BEGIN;" + TABLES + INDEXES + RECORDS_SCHEMA)
            fresh.commit()
        finally:
            fresh.close()
        db.execute("ATTACH DATABASE ? AS fresh", (str(tmp),))
        db.execute("INSERT INTO fresh.meta SELECT * FROM main.meta")
        db.commit()
        db.execute("DETACH DATABASE fresh")
        with tmp.open("rb") as fh:  # on disk before it is renamed
            os.fsync(fh.fileno())
        # closed first: the log is copied into the old file and removed
        db.close()
        os.replace(tmp, path)
        fsync_folder(path.parent)
    except (sqlite3.Error, OSError) as exc:
        # the crawl is over and recorded as such: a full disk costs space only
        with contextlib.suppress(sqlite3.Error):
            db.rollback()
        tmp.unlink(missing_ok=True)
        logger.warning("%s: not compacted (%s)", path, exc)
