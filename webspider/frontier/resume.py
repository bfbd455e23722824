"""Where the crawl state lives, and whether this crawl continues it.

The state is ``<output>/.webspider-state.sqlite3`` (or
``<JOBDIR>/webspider-state.sqlite3`` with JOBDIR). Running the same command
again after any stop — Ctrl-C once or twice, kill -9, a closed laptop —
continues where it stopped (the way ``wget -c`` and HTTrack's ``--continue``
do); after a crawl that finished it starts the next one (the mirror's update
crawl); ``-a restart=1`` starts over. A crawl that cannot continue the state
it finds is refused before it starts (``check_crawl_state``, run by the
crawl command; one line, exit 2): a state another crawl holds (the lock,
which the check takes and keeps until the process ends, so that two crawls
started at once cannot both pass it), a
corrupt or truncated file, one that an earlier crawl found damaged while it
ran (``mark_damaged``: the mark beside it, which a file restored since does
not match), one of another format version, an unfinished
crawl of other start URLs or scope, or of another depth cap (``max_depth``:
what is queued was capped at the old one, so the new one would be half
applied) or another mirror (``mirror``: on, off or elsewhere — the pages
fetched so far are in the old one, or in none, and the end's fix-up would
convert half a mirror), and a ``pages.jsonl`` shorter than the state says
it is (replaced since, by another crawl into the output: the pages it held
would be lost).

"Finished" is the crawl's close reason ``finished``; any other end (Ctrl-C,
a ``CLOSESPIDER_*`` limit, a kill) leaves the crawl to be continued.

With ``WEBSPIDER_STATE`` (a Redis URL) the state is shared by every worker
of the crawl instead (webspider.frontier.redisstate), under the crawl's name:
``WEBSPIDER_STATE_KEY``, or ``webspider-`` and the first 16 hex digits of
the crawl's fingerprint (start URLs and scope), so that the same command on
every worker joins the same crawl. Each worker writes its own outputs
(webspider.frontier.workers). The first worker to open a finished crawl
empties it (the update crawl), while workers started with it wait, then
join the new run (RedisState.new_run_if_finished); ``-a restart=1`` empties
it too, so give it to one worker only.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.job import job_dir

from webspider.config import ConfigError, CrawlConfig, get_bool, get_output_dir
from webspider.frontier.options import DepthOptions, StateOptions
from webspider.frontier.pages import META_PAGES_TAIL, tail_matches
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.sqlitelock import StateLockedError, hold_lock
from webspider.frontier.state import (
    META_FINGERPRINT,
    META_FINISHED,
    META_RUN,
    StateError,
    damaged_refusal,
)
from webspider.keys import OUTPUT_STATE_FILE, PAGES_FILE, STATE_FILE
from webspider.mirror.options import get_mirror_dir
from webspider.utils.atomic import write_atomic

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from webspider.frontier.redisstate import RedisState

#: settings that make two crawls the same crawl (besides the start URLs)
SCOPE_SETTINGS = (
    "WEBSPIDER_SCOPE",
    "WEBSPIDER_INCLUDE",
    "WEBSPIDER_EXCLUDE",
    "WEBSPIDER_EXCLUDE_RE",
    "WEBSPIDER_PREFIXES_CASE_SENSITIVE",
)


logger = logging.getLogger(__name__)

#: the depth cap the crawl was started with ("": none), in the state's meta
META_MAX_DEPTH = "max_depth"
#: the mirror the crawl was started with (``mirror_place``), in the state's meta
META_MIRROR = "mirror"


def state_path(settings: BaseSettings) -> Path:
    directory = job_dir(settings)
    if directory:
        return Path(directory) / STATE_FILE
    return get_output_dir(settings) / OUTPUT_STATE_FILE


#: beside the state's file (its name and this): the mark of a crawl that
#: found the state damaged while it ran (``mark_damaged``)
DAMAGED_SUFFIX = ".damaged"


def damaged_mark(settings: BaseSettings) -> Path:
    """The mark of a damaged embedded state, beside its file (a Redis
    state keeps its own: RedisState.mark_damaged)."""
    path = state_path(settings)
    return path.with_name(path.name + DAMAGED_SUFFIX)


def _identity(path: Path) -> list[int] | None:
    """What tells the state's file from another put in its place."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns]


def mark_damaged(settings: BaseSettings, error: str) -> None:
    """Leave the mark of an embedded state found damaged while the crawl
    ran (its ``error``), once the state is closed: the quick check made
    when a state opens does not see all damage (a missing row of a sound
    B-tree), and the next run of the same command must be refused, not
    meet it again halfway. A file beside the state, not a row in it:
    nothing more is written to a damaged state. It names the state file's
    inode, size and time, so that a file restored from a copy is not
    refused for it. Best effort: a disk that refuses it leaves the next run
    to meet the damage again (and stop again)."""
    mark = {"error": error, "file": _identity(state_path(settings))}
    try:
        write_atomic(damaged_mark(settings), json.dumps(mark) + "\n")
    except OSError as exc:
        logger.warning("Could not mark the crawl state damaged: %s", exc)


def _found_damaged(settings: BaseSettings) -> str | None:
    """The error an earlier crawl found the state damaged with (its mark),
    or None; a mark whose file was replaced since (restored) is removed."""
    mark = damaged_mark(settings)
    try:
        found = json.loads(mark.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # a mark cut short: damaged still
        return f"its mark {mark} is unreadable ({exc})"
    if not isinstance(found, dict):
        return f"its mark {mark} is unreadable"
    if found.get("file") != _identity(state_path(settings)):
        mark.unlink(missing_ok=True)
        return None
    return str(found.get("error") or "damaged")


def _refuse_damaged(settings: BaseSettings) -> None:
    """ConfigError for an embedded state an earlier crawl found damaged (a
    crawl that starts over ignores the mark: ``open_crawl_state`` removes it
    once the new state is made)."""
    if restart(settings):
        return
    error = _found_damaged(settings)
    if error is not None:
        raise ConfigError(f"{state_path(settings)}: {damaged_refusal(error)}")


def restart(settings: BaseSettings) -> bool:
    return get_bool(settings, "WEBSPIDER_STATE_RESTART", False)


def crawl_fingerprint(settings: BaseSettings) -> str:
    """What a continued crawl must share with the one it continues."""
    try:
        start_urls = list(CrawlConfig.of(settings).start_urls)
    except ConfigError:  # a spider of its own, that starts from elsewhere
        start_urls = []
    scope = {name: settings.get(name) for name in SCOPE_SETTINGS}
    data = json.dumps(
        {"start_urls": start_urls, "scope": scope},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(data.encode()).hexdigest()


def depth_cap(settings: BaseSettings) -> str:
    """The crawl's depth cap as the state keeps it ("": none)."""
    options = DepthOptions.of(settings)
    cap = options.max_depth if options.enabled else None
    return "" if cap is None else str(cap)


def mirror_place(settings: BaseSettings) -> str:
    """The crawl's mirror as the state keeps it: "" for none (``mirror=0``),
    else its folder, relative to the output folder when inside it (so that
    an output folder moved as a whole still continues)."""
    mirror = get_mirror_dir(settings)
    if mirror is None:
        return ""
    mirror = mirror.resolve()
    output = get_output_dir(settings).resolve()
    return str(mirror.relative_to(output) if output in mirror.parents else mirror)


def _other_crawl(state: SQLiteState | RedisState, settings: BaseSettings) -> str:
    """Why ``state``, unfinished, is not this crawl's to continue ("": it is).

    A shared crawl's workers each write their own mirror (wherever each is
    told): there only mirror on or off must agree."""
    stored = state.get_meta(META_FINGERPRINT)
    if stored is not None and stored != crawl_fingerprint(settings):
        return "an unfinished crawl of other start URLs or scope"
    cap = state.get_meta(META_MAX_DEPTH)  # None: a state made before it was kept
    if cap is not None and cap != depth_cap(settings):
        return (
            "an unfinished crawl of another depth cap "
            f"(max_depth={cap or 'none'}, given {depth_cap(settings) or 'none'})"
        )
    mirror = state.get_meta(META_MIRROR)  # None: a state made before it was kept
    given = mirror_place(settings)
    if getattr(state, "shared", False) and mirror is not None:
        mirror, given = ("1" if mirror else ""), ("1" if given else "")
    if mirror is not None and mirror != given:
        return (
            "an unfinished crawl with another mirror "
            f"(mirror={mirror or '0'}, given {given or '0'})"
        )
    return ""


def _check_pages(state: SQLiteState, settings: BaseSettings) -> None:
    """A ``pages.jsonl`` shorter than the state says, or whose last committed
    line is not the one the state knows, was written over since the crawl
    stopped (another crawl into this output): continuing would lose the
    pages it held, and keep the other crawl's lines."""
    committed = state.get_offset(PAGES_FILE)
    if not committed or settings.getdict("FEEDS"):
        return
    path = get_output_dir(settings) / PAGES_FILE
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = 0
    tail = state.get_meta(META_PAGES_TAIL)  # None: a state made before it was kept
    written_over = tail is not None and not tail_matches(path, committed, tail)
    if size < committed or written_over:
        raise ConfigError(
            f"{path}: not the file this crawl wrote (replaced or cut since it "
            f"stopped: {size} bytes, {committed} committed); put it back to "
            "continue the crawl, or start over with -a restart=1"
        )


def _refusal(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"{path}: {why}; run it again with the settings it was started with to "
        "continue it, or start over with -a restart=1"
    )


def state_name(settings: BaseSettings) -> str:
    """The crawl's name on Redis (see the module docstring)."""
    key = StateOptions.of(settings).key
    return key or f"webspider-{crawl_fingerprint(settings)[:16]}"


#: seconds the check before a shared crawl waits for Redis to answer at all
REDIS_REACH_SECONDS = 10.0


def _open_shared(
    settings: BaseSettings,
    *,
    fresh: bool = False,
    check_format: bool = True,
    reach_within: float | None = None,
) -> RedisState:
    # redis-py is optional: imported only when a shared state is asked for
    from webspider.frontier.redisstate import RedisState  # noqa: PLC0415
    from webspider.frontier.workers import worker_name  # noqa: PLC0415

    options = StateOptions.of(settings)
    try:
        return RedisState(
            options.url,
            state_name(settings),
            worker=worker_name(get_output_dir(settings)),
            fresh=fresh,
            check_format=check_format,
            # the acks sent as often as the embedded state commits them
            commit_interval=options.commit_interval,
            commit_acks=options.commit_pages or None,
            reach_within=reach_within,
        )
    except StateError as exc:
        raise ConfigError(str(exc)) from None


def _check_shared(settings: BaseSettings) -> None:
    # a crawl that starts over may find a state of another format: deleted
    # a Redis that does not answer before the crawl starts is most likely a
    # wrong address: refused, not waited for without end (the crawl, once
    # running, waits for a Redis that went away)
    state = _open_shared(
        settings, check_format=not restart(settings), reach_within=REDIS_REACH_SECONDS
    )
    try:
        if restart(settings) or state.get_meta(META_FINISHED) == "1":
            return
        why = _other_crawl(state, settings)
        if why:
            raise ConfigError(
                f"{state.where}: {why.replace('an unfinished crawl', 'a crawl')} "
                "has this name; give this one another WEBSPIDER_STATE_KEY, or start "
                "over with -a restart=1"
            )
    finally:
        state.close()


def _open_shared_state(settings: BaseSettings) -> tuple[RedisState, bool]:
    state = _open_shared(settings, fresh=restart(settings))
    if restart(settings):
        logger.info(
            "Starting over (restart=1): the crawl state %s is emptied", state.where
        )
    # one worker empties a finished crawl; the others wait for it, then join
    state.new_run_if_finished()
    fingerprint = crawl_fingerprint(settings)
    stored = state.get_meta(META_FINGERPRINT)
    resumed = stored is not None
    state.set_meta(META_FINGERPRINT, fingerprint)
    if not resumed:
        state.set_meta(META_MAX_DEPTH, depth_cap(settings))
        state.set_meta(META_MIRROR, mirror_place(settings))
    if not resumed and state.get_meta(META_RUN) is None:
        state.set_meta(META_RUN, "1")
    return state, resumed


def check_crawl_state(settings: BaseSettings) -> None:
    """Refuse (ConfigError, one line) a crawl that cannot use the state it
    finds; see the module docstring."""
    if StateOptions.of(settings).shared:
        _check_shared(settings)
        return
    path = state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # held from here to the end of this process: a crawl started after
        # this check finds the lock taken, and is refused here too
        hold_lock(path)
    except StateLockedError:
        raise ConfigError(
            f"{path}: another crawl is running on this state (its lock is held); "
            "wait for it to end, or crawl into another output folder"
        ) from None
    _refuse_damaged(settings)
    try:
        state = (
            SQLiteState(path, fresh=False, release_leases=False)
            if path.exists()
            else None
        )
    except StateError as exc:
        if restart(settings):
            return
        raise ConfigError(
            f"{exc}; start over with -a restart=1 (the crawl cannot be continued)"
        ) from None
    if state is None:
        return
    try:
        if restart(settings) or state.get_meta(META_FINISHED) == "1":
            return
        why = _other_crawl(state, settings)
        if why:
            raise _refusal(path, why)
        _check_pages(state, settings)
    finally:
        state.close()


def open_crawl_state(
    settings: BaseSettings,
) -> tuple[SQLiteState | RedisState, bool]:
    """The crawl state, and whether this crawl continues an earlier one."""
    if StateOptions.of(settings).shared:
        return _open_shared_state(settings)
    _refuse_damaged(settings)
    path = state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    options = StateOptions.of(settings)
    interval, acks = options.commit_interval, options.commit_pages or None
    if restart(settings) and path.exists():
        logger.info("Starting over (restart=1): the crawl state %s is emptied", path)
    try:
        state = SQLiteState(
            path, fresh=restart(settings), commit_interval=interval, commit_acks=acks
        )
    except StateError as exc:
        raise ConfigError(str(exc)) from None
    if state.get_meta(META_FINISHED) == "1":
        # the last crawl finished: this one starts afresh (an update crawl)
        run = int(state.get_meta(META_RUN) or 0)
        state.close(keep_lock=True)  # no other crawl slips in between
        state = SQLiteState(
            path, fresh=True, commit_interval=interval, commit_acks=acks
        )
        state.set_meta(META_RUN, str(run))
    why = _other_crawl(state, settings)
    if why:
        state.close()
        raise _refusal(path, why)
    resumed = state.get_meta(META_FINGERPRINT) is not None
    state.set_meta(META_FINGERPRINT, crawl_fingerprint(settings))
    state.set_meta(META_MAX_DEPTH, depth_cap(settings))
    state.set_meta(META_MIRROR, mirror_place(settings))
    state.set_meta(META_RUN, str(int(state.get_meta(META_RUN) or 0) + 1))
    state.commit()
    if restart(settings):  # the damaged state is gone
        damaged_mark(settings).unlink(missing_ok=True)
    return state, resumed
