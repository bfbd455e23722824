"""``scrapy crawl``, with bad input answered in one line.

Scrapy's own ``crawl`` command reports a bad spider argument with a traceback
(raised deep inside the crawler start-up). This one validates every setting
and spider argument first (webspider.validation.check_settings), before Scrapy
starts its crawler process and logging, and, when something is wrong, prints
``webspider: error: <what to fix>`` to stderr and exits with status 2 before
anything is crawled or written. A Scrapy without one of the internals
webspider relies on (webspider.internals) is refused the same way.

Ctrl-C before the crawl has started (while Python imports Scrapy's parts,
the settings are checked or the crawl state is opened) prints one line,
``webspider: interrupted before the crawl started``, and ends the process as
SIGINT ends a program (exit status 130 in a shell), not with a traceback.
Scrapy's own handlers (graceful stop, then a forced one) take over once the
crawl runs.

With WEBSPIDER_FAIL_ON_BROKEN (``-a fail_on_broken=1``) it exits with status
3 when the crawl found broken internal links, for a site's CI.

A crawl stopped by a signal before it finished (Ctrl-C once or twice,
SIGTERM) ends with one line, ``webspider: interrupted: the crawl is not
finished; run the same command again to continue it``, and exit status 128 +
the signal's number (130 for Ctrl-C, 143 for SIGTERM), as a program the
signal ended does and as ``scrapy combine`` does: a script that runs the
crawl and then publishes its mirror does not take half a crawl for a whole
one. A signal that came once the crawl had finished (during its end-of-crawl
work, which a single Ctrl-C lets complete) leaves the status at 0.

A crawl that a write the disk refused stopped (full, over quota or the
file-size limit, read-only, failing: webspider.storage) ends with one line
naming the file, the error and what to do, e.g. ``webspider: cannot write
out/pages.jsonl: No space left on device; the crawl is not finished: free
space and run the same command again to continue it``, and exit status 4.
One that a damaged crawl state stopped (its file overwritten or cut while
the crawl ran, a row missing) ends with one line naming the state, e.g.
``webspider: damaged crawl state out/.webspider-state.sqlite3: database disk
image is malformed; the crawl is not finished and cannot be continued: start
over with -a restart=1, or restore the file from a copy``, and exit status 5.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from functools import partial
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.settings import BaseSettings, Settings
from scrapy.spiderloader import get_spider_loader
from twisted.internet.task import LoopingCall

from webspider.config import (
    ARGUMENT_PRIORITY,
    ConfigError,
    apply_spider_arguments,
    get_given_start_urls,
    get_output_dir,
    keep_start_urls,
)
from webspider.frontier.options import StateOptions
from webspider.frontier.workers import claim_worker_dir
from webspider.internals import (
    ScrapyInternalsError,
    check_internals,
    import_tls_aliases,
)
from webspider.keys import STATS_BROKEN_INTERNAL
from webspider.pageworker.client import start_early
from webspider.pageworker.options import PageWorkerOptions
from webspider.reports.options import ReportOptions
from webspider.signals import SignalManager
from webspider.spiders.webspider import WebSpider
from webspider.storage import crawl_stop
from webspider.utils.memory import release_free_memory
from webspider.validation import check_settings

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable
    from typing import Any

    from scrapy import Spider
    from scrapy.crawler import Crawler

#: gc thresholds for a crawl (Python's default: 700, 10, 10)
GC_THRESHOLDS = (50_000, 20, 100)
#: seconds between two rounds of Housekeeping
HOUSEKEEPING_SECONDS = 1.0
EXIT_USAGE = 2
#: WEBSPIDER_FAIL_ON_BROKEN and broken internal links were found
EXIT_BROKEN = 3
#: a write the disk refused stopped the crawl (webspider.storage)
EXIT_WRITE_FAILED = 4
#: a damaged crawl state stopped the crawl (webspider.storage)
EXIT_STATE_DAMAGED = 5
#: a crawl a signal stopped exits with this plus the signal's number
EXIT_SIGNAL = 128
#: Scrapy components that do nothing while their switch is off, by the
#: component-list setting that holds them: (setting, component, switch);
#: each one's module imports something heavy that every start would pay for
SWITCHED_OFF_COMPONENTS = (
    # imports aiohttp (and loads the CA store twice)
    (
        "EXTENSIONS_BASE",
        "scrapy.extensions.remote_control.RemoteControl",
        "REMOTE_CONTROL_ENABLED",
    ),
    # imports tldextract (and requests)
    (
        "DOWNLOADER_MIDDLEWARES_BASE",
        "scrapy.downloadermiddlewares.cookies.CookiesMiddleware",
        "COOKIES_ENABLED",
    ),
    # imports twisted.conch
    (
        "EXTENSIONS_BASE",
        "scrapy.extensions.telnet.TelnetConsole",
        "TELNETCONSOLE_ENABLED",
    ),
)


def tune_garbage_collector() -> None:
    """A crawl allocates millions of short-lived objects (links, spans,
    requests), and with Python's default thresholds the cycle collector ran
    again and again over the same long-lived start-up objects. Those are
    frozen out of its reach, and it runs less often; objects in cycles are
    still collected.

    No gc.collect() first: it slowed every start and found few unreachable
    objects to free (frozen instead, for the life of the process)."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class Housekeeping:
    """What a crawl's process does every HOUSEKEEPING_SECONDS for its memory.

    - It is a Twisted timer, so that the reactor drops its cancelled ones.
      Each download leaves two cancelled Twisted timers behind (its
      DOWNLOAD_TIMEOUT and the HTTP pool's idle-connection timeout). Twisted
      drops cancelled timers only while it runs its due ones; with the
      asyncio reactor (Scrapy's default) that happens only when one falls
      due, and the earliest of them is a minute away while each download
      adds a later one. So they piled up for the crawl's first minute and
      more (16,500 on a 10,000-page site, ~6 MB of the crawl's RSS).
    - It gives the C library's free pages back to the system
      (webspider.utils.memory).

    bench/README.md, "Peak RSS against plain Scrapy's, per process"."""

    def __init__(self) -> None:
        self._call = LoopingCall(release_free_memory)

    def start(self) -> None:
        self._call.start(HOUSEKEEPING_SECONDS, now=False)

    def stop(self) -> None:
        if self._call.running:
            self._call.stop()


class StopSignals:
    """The signals that stopped the crawl, in order: Scrapy's handlers (the
    graceful stop, then the forced one it installs in its place) are wrapped
    once they are in place, so that the command's exit status can say the
    crawl was interrupted."""

    watched = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: list[int] = []

    def watch(self) -> None:
        for signum in self.watched:
            handler = signal.getsignal(signum)
            if callable(handler):
                signal.signal(signum, partial(self._received, handler))

    def _received(
        self, handler: Callable[[int, Any], object], signum: int, frame: Any
    ) -> None:
        self.received.append(signum)
        handler(signum, frame)
        self.watch()  # what the handler put in its place (Scrapy: the forced stop)

    def interrupted(self, finish_reason: object) -> int:
        """The signal that interrupted the crawl, 0 if none did: a signal
        during the end-of-crawl work of a crawl that finished lets it
        complete, unless it came twice (the forced stop)."""
        if not self.received:
            return 0
        if finish_reason == "finished" and len(self.received) == 1:
            return 0
        return self.received[0]


def switched_off_components(settings: BaseSettings) -> list[tuple[str, str]]:
    """(setting, component) of the SWITCHED_OFF_COMPONENTS whose switch is
    off in these settings."""
    return [
        (name, component)
        for name, component, switch in SWITCHED_OFF_COMPONENTS
        if not settings.getbool(switch)
    ]


def interrupted_before_the_crawl(signum: int, _frame: object) -> None:
    """SIGINT handler until Scrapy installs its own (when its reactor
    starts): nothing has been fetched yet, and whatever the crawl state holds
    is as safe as after ``kill -9``, so the process ends at once, as the
    signal ends it, with one line instead of a KeyboardInterrupt traceback
    from wherever start-up happened to be."""
    sys.stderr.write("webspider: interrupted before the crawl started\n")
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def leave_out_components(
    settings: BaseSettings, components: Iterable[tuple[str, str]]
) -> None:
    """Take each (setting, component) out of that component-list setting,
    keeping the setting's priority.

    Scrapy imports every component listed in a component-list setting
    (``EXTENSIONS_BASE``, ``DOWNLOADER_MIDDLEWARES_BASE``…) to build it, even
    one whose switch is off, which then only raises NotConfigured; importing
    the modules of those in SWITCHED_OFF_COMPONENTS was a sizeable part of
    every crawl's start."""
    for name, component in components:
        listed = settings.getdict(name)
        if component not in listed:
            continue
        del listed[component]
        priority = settings.getpriority(name)
        assert priority is not None
        settings.set(name, listed, priority=priority)


class Command(ScrapyCrawlCommand):
    crawler: Crawler | None = None
    #: made with the crawler (``_create_crawler``)
    stop_signals: StopSignals | None = None

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        signal.signal(signal.SIGINT, interrupted_before_the_crawl)
        super().process_options(args, opts)
        if len(args) != 1:
            return  # Scrapy's own usage message
        # Before anything imports them (the settings' check loads the
        # download handlers): the crawl needs them whatever the spider.
        import_tls_aliases()
        # Whatever the spider: this command's _create_crawler, and the
        # project's DOWNLOADER and SCHEDULER, need them too.
        try:
            check_internals()
        except ScrapyInternalsError as exc:
            print(f"webspider: error: {exc}", file=sys.stderr)
            sys.exit(EXIT_USAGE)
        try:
            spidercls = get_spider_loader(self.settings or Settings()).load(args[0])
        except KeyError:
            return  # Scrapy reports an unknown spider
        if not issubclass(spidercls, WebSpider):
            return
        assert self.settings is not None
        settings = self.settings.copy()
        spidercls.update_settings(settings)
        try:
            apply_spider_arguments(settings, dict(opts.spargs))
            # the one read of an @file of start URLs (every check below,
            # and the crawl, get the list)
            start_urls = tuple(get_given_start_urls(settings))
            keep_start_urls(settings, start_urls)
            check_settings(settings)
            if StateOptions.of(settings).shared:
                # one crawl, many workers: each writes into a folder of its own
                folder = claim_worker_dir(get_output_dir(settings))
                self.settings.set(
                    "WEBSPIDER_OUTPUT", str(folder), priority=ARGUMENT_PRIORITY
                )
                if "output" in opts.spargs:  # applied again when the crawl starts
                    opts.spargs["output"] = str(folder)
        except (ConfigError, OSError) as exc:
            print(f"webspider: error: {exc}", file=sys.stderr)
            sys.exit(EXIT_USAGE)
        if PageWorkerOptions.of(settings).enabled:
            # its start runs beside Scrapy's building of the crawl
            start_early()
        # The crawl gets the start URLs as read here, not the @file again.
        for name in ("start_urls", "url"):
            opts.spargs.pop(name, None)
        self.settings.set(
            "WEBSPIDER_START_URLS", list(start_urls), priority=ARGUMENT_PRIORITY
        )

    def _create_crawler(self, spidercls: type[Spider] | str) -> Crawler:
        # Overrides a Scrapy internal (listed in webspider.internals). Kept
        # to read its stats once the crawl is over (CrawlerProcess forgets
        # its crawlers when they finish).
        self.crawler = super()._create_crawler(spidercls)
        # before any component takes it (the engine, the scraper and the
        # downloader keep the crawler's manager): same connections, cheaper
        # sends
        self.crawler.signals = SignalManager(self.crawler)
        # Switched-off components are left out of Scrapy's lists, decided on
        # the crawler's settings (they hold the spider's own). The command's
        # settings are merged into the crawler's when the crawl starts, and
        # their lists would replace the crawler's (same priority), so they
        # lose the components too.
        assert self.settings is not None
        off = switched_off_components(self.crawler.settings)
        leave_out_components(self.crawler.settings, off)
        leave_out_components(self.settings, off)
        self.crawler.signals.connect(
            self.freeze_start_up_objects, signal=signals.engine_started
        )
        # kept here: signals hold their receivers weakly
        self.housekeeping = chores = Housekeeping()
        self.crawler.signals.connect(chores.start, signal=signals.engine_started)
        self.crawler.signals.connect(chores.stop, signal=signals.engine_stopped)
        # Scrapy's handlers are in place once the engine starts
        self.stop_signals = stops = StopSignals()
        self.crawler.signals.connect(stops.watch, signal=signals.engine_started)
        return self.crawler

    def freeze_start_up_objects(self) -> None:
        """Freeze, too, what building the crawler added after
        tune_garbage_collector(): the components and the HTTP download
        handler (tens of thousands of objects) live as long as the process,
        and Python's finalization took them apart one by one at exit, which
        freezing shortens."""
        gc.freeze()

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        tune_garbage_collector()
        super().run(args, opts)
        stop = crawl_stop(self.crawler) if self.crawler is not None else None
        if stop is not None:
            # whatever else stopped it meanwhile: it is not finished
            sys.stderr.write(f"webspider: {stop.line()}\n")
            self.exitcode = EXIT_STATE_DAMAGED if stop.damaged else EXIT_WRITE_FAILED
        elif self.exitcode == 0 and (signum := self.interrupted()):
            sys.stderr.write(
                "webspider: interrupted: the crawl is not finished; run the same "
                "command again to continue it\n"
            )
            self.exitcode = EXIT_SIGNAL + signum
        elif self.exitcode == 0 and self.broken_internal_links():
            self.exitcode = EXIT_BROKEN

    def interrupted(self) -> int:
        """The signal that stopped the crawl before it finished, 0 if none."""
        crawler, stops = self.crawler, self.stop_signals
        if crawler is None or stops is None:
            return 0
        reason = crawler.stats.get_value("finish_reason") if crawler.stats else None
        return stops.interrupted(reason)

    def broken_internal_links(self) -> int:
        """Broken internal links found, when they should fail the command."""
        crawler = self.crawler
        if crawler is None or crawler.stats is None:
            return 0
        if not ReportOptions.of(crawler.settings).fail_on_broken:
            return 0
        return int(crawler.stats.get_value(STATS_BROKEN_INTERNAL, 0))
