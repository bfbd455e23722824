"""The crawl command's own start-up work (webspider.commands.crawl)."""

from __future__ import annotations

import gc

from scrapy.settings import SETTINGS_PRIORITIES, Settings

from webspider import settings as webspider_settings
from webspider.commands.crawl import (
    GC_THRESHOLDS,
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
