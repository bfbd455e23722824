"""The crawl command's own start-up work (webspider.commands.crawl)."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys

import pytest
from scrapy.settings import SETTINGS_PRIORITIES, Settings

from webspider import settings as webspider_settings
from webspider.commands.crawl import (
    GC_THRESHOLDS,
    StopSignals,
    leave_out_components,
    switched_off_components,
    tune_garbage_collector,
)


def test_the_crawl_command_tunes_the_garbage_collector():
    before = gc.get_threshold()
    try:
        tune_garbage_collector()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 0  # start-up objects out of its reach
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_leaving_out_a_component_keeps_the_rest_of_the_list():
    settings = Settings()
    settings.setmodule(webspider_settings, priority="project")
    settings.set("COOKIES_ENABLED", True, priority="cmdline")
    extensions = settings.getdict("EXTENSIONS_BASE")
    off = switched_off_components(settings)
    assert off == [
        ("EXTENSIONS_BASE", "scrapy.extensions.remote_control.RemoteControl"),
        ("EXTENSIONS_BASE", "scrapy.extensions.telnet.TelnetConsole"),
    ]
    leave_out_components(settings, off)
    left = settings.getdict("EXTENSIONS_BASE")
    del extensions["scrapy.extensions.remote_control.RemoteControl"]
    del extensions["scrapy.extensions.telnet.TelnetConsole"]
    assert left == extensions
    assert settings.getpriority("EXTENSIONS_BASE") == SETTINGS_PRIORITIES["default"]
    assert "scrapy.downloadermiddlewares.cookies.CookiesMiddleware" in (
        settings.getdict("DOWNLOADER_MIDDLEWARES_BASE")
    )
    leave_out_components(settings, off)  # twice: nothing more to leave out
    assert settings.getdict("EXTENSIONS_BASE") == extensions


SWEEP_SCRIPT = """
import asyncio, sys, weakref
from twisted.internet import asyncioreactor
asyncioreactor.install()
from twisted.internet import reactor
from webspider.commands.crawl import Housekeeping

timers = []
left = []

def nothing():
    pass

def downloads():
    # their timers: set, then cancelled when their answer comes
    for _ in range(500):
        call = reactor.callLater(600, nothing)
        call.cancel()
        timers.append(weakref.ref(call))
    if sys.argv[1] == "sweep":
        Housekeeping().start()

def count():
    left.append(sum(ref() is not None for ref in timers))
    reactor.stop()

# on asyncio's clock, not Twisted's (whose timers would sweep too)
loop = asyncio.get_event_loop()
loop.call_later(0.2, downloads)
loop.call_later(1.8, count)
reactor.run()
print(left[0])
"""


@pytest.mark.e2e
@pytest.mark.parametrize(("mode", "left"), [("sweep", 0), ("none", 500)])
def test_housekeeping_lets_the_reactor_drop_cancelled_timers(mode, left):
    done = subprocess.run(
        [sys.executable, "-c", SWEEP_SCRIPT, mode],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert int(done.stdout) == left


def test_the_signals_that_stopped_the_crawl_are_kept_in_order():
    # Scrapy's handlers: the graceful stop puts the forced one in its place
    called = []

    def forced(signum, _frame):
        called.append(("forced", signum))

    def graceful(signum, _frame):
        called.append(("graceful", signum))
        signal.signal(signal.SIGINT, forced)

    before = {s: signal.getsignal(s) for s in StopSignals.watched}
    try:
        signal.signal(signal.SIGINT, graceful)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not callable: left alone
        stops = StopSignals()
        stops.watch()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        assert stops.interrupted("shutdown") == 0  # no signal came
        os.kill(os.getpid(), signal.SIGINT)
        assert called == [("graceful", signal.SIGINT)]
        assert stops.interrupted("shutdown") == signal.SIGINT
        # once during the end of a crawl that finished: it completed
        assert stops.interrupted("finished") == 0
        os.kill(os.getpid(), signal.SIGINT)  # the forced stop, wrapped too
        assert called[-1] == ("forced", signal.SIGINT)
        assert stops.received == [signal.SIGINT, signal.SIGINT]
        assert stops.interrupted("finished") == signal.SIGINT
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
