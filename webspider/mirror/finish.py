"""The end of the mirror, when the crawl ends: the fix-up of the links of
stored pages that depend on what was mirrored after them (driven here, done
by webspider.mirror.fixup), the URLs that are gone, the export of the
mirror's index to ``<output>/mirror-state.jsonl``, and changes.jsonl
closed.

This work runs on ``crawl_state_finishing`` (on the event loop, the fix-up
shared with the page worker when it writes the mirror) or
``crawl_state_closing``, while the crawl state is open, committing as it
goes; a kill during it leaves the crawl unfinished, and the same command
finishes it. Without a crawl state (another SCHEDULER) it runs on
``spider_closed``. MirrorStore's handlers of those signals call it.

Apart from webspider.mirror.store because it runs once a crawl, on the
mirror as a whole, not on a page.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from webspider.mirror.changes import GONE
from webspider.mirror.fixup import FIX_UP_COMMIT, FixUp
from webspider.mirror.stats import STATS_CONVERTED, STATS_FIXED
from webspider.storage import crawl_stop, stop_crawl

if TYPE_CHECKING:
    from collections.abc import Callable

    from webspider.mirror.fixup import FileFixer, FixedUp
    from webspider.mirror.store import MirrorStore

logger = logging.getLogger(__name__)


def fix_up(store: MirrorStore, commit: Callable[[], None] | None = None) -> int:
    """Fix the links of ``store``'s pages that depend on what was mirrored
    after them (webspider.mirror.fixup), committing (``commit``) as it
    goes. Returns how many pages were rewritten."""
    fixing = _fix_up(store, commit)
    return 0 if fixing is None else _fixed_up(store, fixing.run(commit))


async def fix_up_shared(
    store: MirrorStore, fixer: FileFixer, commit: Callable[[], None] | None = None
) -> int:
    """``fix_up``, the files read, rewritten and written by this process
    and by ``fixer`` (the page worker) together."""
    fixing = _fix_up(store, commit)
    if fixing is None:
        return 0
    return _fixed_up(store, await fixing.run_shared(fixer, commit))


def _fix_up(store: MirrorStore, commit: Callable[[], None] | None) -> FixUp | None:
    """The fix-up of the pages waiting for one, or None (none waits, or
    no mirror converts links)."""
    state, tree = store.state, store.tree
    if state is None or tree is None or not store.convert:
        return None
    state.gather(commit)
    waiting = state.pending.count()
    if not waiting:
        return None
    logger.info("Mirror: fixing up the links of up to %d pages", waiting)
    return FixUp(state, tree, store.refused)


def _fixed_up(store: MirrorStore, done: FixedUp) -> int:
    store.inc(STATS_CONVERTED, done.links)
    store.inc(STATS_FIXED, done.pages)
    return done.pages


async def end_shared(
    store: MirrorStore, reason: str, commit: Callable[[], None] | None = None
) -> None:
    """The crawl ends, on the event loop: the fix-up shares its files'
    work with the page worker when it writes the mirror (its core is
    idle by now), and the rest of ``end`` follows."""
    state, writer = store.state, store.writer
    if state is None or store.ended or writer is None or reason == "shutdown":
        return  # finished on crawl_state_closing
    store.ended = True
    try:
        state.flush()
        started = time.monotonic()
        fixed = await store.fix_up_pages_shared(writer, commit)
        # before the mirror's index is written and the state closes (this
        # process's last work, some 0.05 s on python3.11-doc): the page
        # worker stops meanwhile, on its own core
        writer.mirror_done()
        _end(store, reason, commit, fixed, started)
    except Exception as exc:
        # an async receiver's error would be logged with its traceback
        if not stop_crawl(store.crawler, exc):
            raise


def end(store: MirrorStore, reason: str, commit: Callable[[], None] | None) -> None:
    """The end of the crawl: the fix-up, what is gone, the export.

    A crawl paused by Ctrl-C (``shutdown``) is not over: the same command
    goes on with it, and the run that finishes it fixes the links up.
    Fixed up now, a link to a file not mirrored yet would become
    absolute, and then relative again (as the path the fix-up computes,
    not as the page wrote it) once its file is written: the mirror of a
    paused and resumed crawl would differ from an uninterrupted one's.
    Meanwhile such links lead where their files are expected."""
    state = store.state
    if state is None or store.ended:
        return
    store.ended = True
    if crawl_stop(store.crawler) is not None:
        # a write the disk refused stopped the crawl: its end is the
        # resumed crawl's (the crawl state closed without a commit)
        store.changes.close(store.crawler)
        return
    state.flush()
    started = time.monotonic()
    fixed = 0 if reason == "shutdown" else store.fix_up_pages(commit)
    _end(store, reason, commit, fixed, started)


def _end(
    store: MirrorStore,
    reason: str,
    commit: Callable[[], None] | None,
    fixed: int,
    started: float,
) -> None:
    """``end`` after the fix-up (``fixed`` pages since ``started``)."""
    state = store.state
    assert state is not None
    if crawl_stop(store.crawler) is not None:
        store.changes.close(store.crawler)
        return
    if fixed:
        logger.info(
            "Mirror: links fixed up in %d pages in %.2f s",
            fixed,
            time.monotonic() - started,
        )
    finished = reason == "finished"
    if finished:
        for gone, entry in enumerate(state.unseen(store.run), 1):
            entry.gone = True
            state.update(entry)
            store.record_change(entry.url, GONE, entry.path)
            if commit is not None and gone % FIX_UP_COMMIT == 0:
                commit()
    state.end(finished)
    try:
        state.export(store.state_path)
    except OSError as exc:
        if not stop_crawl(store.crawler, exc, store.state_path):
            logger.error("Mirror: could not write %s: %s", store.state_path, exc)
    if commit is not None:
        commit()
    store.changes.close(store.crawler)
