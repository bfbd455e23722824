"""The lock of the embedded crawl state: a ``<file>.lock`` beside the state
is flock()ed while it is open, so that a second crawl on the same state is
refused (StateLockedError), and the OS releases the lock when the process
dies however it dies. The crawl command takes it before the crawl opens the
state (``hold_lock``), so that no other crawl starts in between.

Apart from webspider.frontier.sqlite because the command's checks
(webspider.validation, webspider.frontier.resume) take the lock without
opening a state, and the lock knows nothing of the file's tables.

Pure: standard library only.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from webspider.frontier.state import StateError


class StateLockedError(StateError):
    """Another process holds the state."""


#: locks this process holds on states for as long as it lives (hold_lock)
HELD: dict[str, IO[bytes]] = {}


def acquire(path: Path) -> IO[bytes]:
    lock_path = path.with_name(path.name + ".lock")
    fh = lock_path.open("ab")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise StateLockedError(
            f"{path}: in use by another crawl (locked: {lock_path})"
        ) from None
    return fh


def hold_lock(path: str | Path) -> None:
    """Take the lock of the state at ``path`` until the crawl's state is
    closed (StateLockedError when another process has it): the crawl command
    takes it when it checks the state, so that no other crawl starts between
    the check and the crawl's own opening of the state. A SQLiteState opened
    on that path in this process then uses this lock: a look at the state
    (``release_leases=False``, the check's) leaves it held; the crawl's own
    state takes it over, and releases it when it closes (so an in-process
    crawl leaves no lock file open behind it)."""
    key = os.path.abspath(path)
    if key not in HELD:
        HELD[key] = acquire(Path(path))


def release_held_locks() -> None:
    """Release every lock hold_lock took and no crawl took over (a check
    of the settings without a crawl after it: in-process tests)."""
    for fh in HELD.values():
        fh.close()
    HELD.clear()
