"""Every feature's checks, run before the crawl starts.

This module stands above the features: it runs each one's options parser, so
that bad input is one clear line at start (the ``crawl`` command prints it
and exits with status 2) instead of a traceback deep inside a component.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.utils.job import job_dir
from scrapy.utils.misc import load_object

from webspider import settings as defaults
from webspider.addresses.options import AddressOptions
from webspider.bounds.options import BoundsOptions
from webspider.config import (
    ConfigError,
    CrawlConfig,
    get_bool,
    get_float,
    get_int,
    get_output_dir,
)
from webspider.credentials.options import CredentialsOptions
from webspider.directives.options import DirectivesOptions
from webspider.download.options import DownloadOptions
from webspider.frontier.options import DepthOptions, StateOptions
from webspider.frontier.resume import check_crawl_state
from webspider.frontier.schedulerlookup import check_scheduler
from webspider.frontier.sqlitelock import StateLockedError, hold_lock
from webspider.keys import OUTPUT_STATE_FILE
from webspider.mirror.options import MirrorOptions, get_mirror_dir
from webspider.page.options import PageOptions
from webspider.pageworker.options import PageWorkerOptions
from webspider.politeness.options import PolitenessOptions
from webspider.reports.options import ReportOptions
from webspider.scope.options import ScopeOptions, get_dropped_seeds

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.settings import BaseSettings

#: every setting of webspider's own, as listed (with its default) in
#: webspider.settings
KNOWN_SETTINGS = frozenset(
    name for name in dir(defaults) if name.startswith("WEBSPIDER_")
)


def check_known_settings(settings: BaseSettings) -> None:
    """A ``WEBSPIDER_*`` setting webspider does not know is a typo
    (``-s WEBSPIDER_MIRROR_CONVERT_LINK=0``) that would otherwise be ignored
    without a word, as unknown spider arguments are refused."""
    unknown = sorted(
        name
        for name in settings
        if name.startswith("WEBSPIDER_") and name not in KNOWN_SETTINGS
    )
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, KNOWN_SETTINGS, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    more = f", and {len(unknown) - 1} more" if len(unknown) > 1 else ""
    raise ConfigError(f"unknown setting {name}{hint}{more}")


def check_typed_settings(settings: BaseSettings) -> None:
    """Every WEBSPIDER_* setting whose default is a bool, int or float must
    parse as one, whichever component reads it."""
    for name in KNOWN_SETTINGS:
        default = getattr(defaults, name)
        if isinstance(default, bool):
            get_bool(settings, name, default)
        elif isinstance(default, int):
            get_int(settings, name, default)
        elif isinstance(default, float):
            get_float(settings, name, default)


def check_folders_and_state(settings: BaseSettings) -> None:
    """The folders (``check_folders``), then the crawl state
    (``check_crawl_state``: it lives in the output folder). A state that
    refuses the crawl (another mirror, another scope, …) leaves no folder
    these checks made: a refused resume with ``-a mirror=1`` left an empty
    ``mirror`` folder beside the unfinished crawl's files."""
    made = check_folders(settings)
    try:
        check_crawl_state(settings)
    except ConfigError:
        for folder in reversed(made):
            with contextlib.suppress(OSError):  # not empty, or gone: kept
                folder.rmdir()
        raise


def check_folders(settings: BaseSettings) -> list[Path]:
    """The output folder and the mirror can be made: a mirror that could not
    was found only once the crawl ran (a traceback a page, nothing in
    pages.jsonl, exit status 0). Made here, once every other setting passed.
    A worker of a shared crawl writes into a folder of its own, chosen after
    these checks: its mirror is made when the crawl opens. Returns the
    folders it made, parents first."""
    made: list[Path] = []
    output = get_output_dir(settings)
    folders = [("output", output)]
    mirror = get_mirror_dir(settings)
    if mirror is not None and not StateOptions.of(settings).shared:
        # a mirror apart from the output first: refused, it leaves no output
        inside = output.resolve() in mirror.resolve().parents
        folders.insert(len(folders) if inside else 0, ("mirror", mirror))
    for name, folder in folders:
        missing = [folder, *folder.parents]
        missing = [path for path in missing if not path.exists()]
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"{name} {str(folder)!r} cannot be made: {exc.strerror or exc}"
            ) from None
        made += reversed(missing)
    if not StateOptions.of(settings).shared and job_dir(settings):
        # The state's lock keeps a second crawl off the state; with JOBDIR the
        # state is elsewhere, and a second crawl into this output replaced
        # pages.jsonl under the first: the lock the output's own state would
        # have is held as well, until this process ends.
        try:
            hold_lock(output / OUTPUT_STATE_FILE)
        except StateLockedError:
            raise ConfigError(
                f"output {str(output)!r}: another crawl is writing into it; "
                "wait for it to end, or crawl into another output folder"
            ) from None
    return made


#: Scrapy's numeric settings webspider sets or reads (README, "Scrapy settings
#: webspider sets"), with their least value: Scrapy reads them once the crawl
#: has started, where a malformed one was a traceback (exit status 1)
SCRAPY_NUMBERS: dict[str, tuple[type, int]] = {
    "CONCURRENT_REQUESTS": (int, 1),
    "CONCURRENT_REQUESTS_PER_DOMAIN": (int, 1),
    "CONCURRENT_ITEMS": (int, 1),
    "DOWNLOAD_DELAY": (float, 0),
    "DOWNLOAD_TIMEOUT": (float, 0),
    "DOWNLOAD_MAXSIZE": (int, 0),
    "DOWNLOAD_WARNSIZE": (int, 0),
    "RETRY_TIMES": (int, 0),
    "REDIRECT_MAX_TIMES": (int, 0),
    "URLLENGTH_LIMIT": (int, 0),
    "CLOSESPIDER_TIMEOUT": (float, 0),
    "CLOSESPIDER_ITEMCOUNT": (int, 0),
    "CLOSESPIDER_PAGECOUNT": (int, 0),
    "CLOSESPIDER_ERRORCOUNT": (int, 0),
}


def check_scrapy_numbers(settings: BaseSettings) -> None:
    for name, (kind, least) in SCRAPY_NUMBERS.items():
        if settings.get(name) is None:
            continue
        if kind is int:
            get_int(settings, name, minimum=least)
        else:
            get_float(settings, name, minimum=least)


def check_event_loop(settings: BaseSettings) -> None:
    """ASYNCIO_EVENT_LOOP names an asyncio event loop class that imports:
    Scrapy imports it only when it installs the reactor, and a name that
    does not import (``uvloop.Loop`` where uvloop is not installed, as on
    Windows, which it has no build for) was a traceback there, exit status
    1. Nothing is chosen in its place: the crawl runs on the loop named, or
    does not start."""
    path = settings.get("ASYNCIO_EVENT_LOOP")
    if not path:
        return
    try:
        loop = load_object(path)
    except (ImportError, NameError, ValueError, AttributeError) as exc:
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name == "uvloop":
            hint = (
                " (pip install uvloop; it has no Windows build: there, -s "
                "ASYNCIO_EVENT_LOOP=asyncio.SelectorEventLoop)"
            )
        raise ConfigError(
            f"ASYNCIO_EVENT_LOOP {path!r} cannot be loaded: {exc}{hint}"
        ) from None
    if not (isinstance(loop, type) and issubclass(loop, asyncio.AbstractEventLoop)):
        raise ConfigError(
            f"ASYNCIO_EVENT_LOOP {path!r} is not an asyncio event loop class"
        )


#: the checks ``check_settings`` runs, in order; each raises ConfigError
VALIDATORS: list[Callable[[BaseSettings], object]] = [
    check_known_settings,
    CrawlConfig.from_settings,
    ScopeOptions.from_settings,
    PolitenessOptions.from_settings,
    AddressOptions.from_settings,
    DownloadOptions.from_settings,
    CredentialsOptions.from_settings,
    DirectivesOptions.from_settings,
    DepthOptions.from_settings,
    check_scheduler,
    MirrorOptions.from_settings,
    PageWorkerOptions.from_settings,
    PageOptions.from_settings,
    BoundsOptions.from_settings,
    ReportOptions.from_settings,
    get_dropped_seeds,
    check_typed_settings,
    check_scrapy_numbers,
    check_event_loop,
    # last: it opens the crawl state (after every other check passed)
    check_folders_and_state,
]


def check_settings(settings: BaseSettings) -> None:
    for validate in VALIDATORS:
        validate(settings)
