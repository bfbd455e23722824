"""``scrapy crawl``, with bad input answered in one line.

Scrapy's own ``crawl`` command reports a bad spider argument with a traceback
(raised deep inside the crawler start-up). This one validates every setting
and spider argument first (webspider.config.check_settings) and, when
something is wrong, prints ``webspider: error: <what to fix>`` to stderr and
exits with status 2 before anything is crawled or written.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from webspider.config import ConfigError, apply_spider_arguments, check_settings
from webspider.spiders.webspider import WebSpider

if TYPE_CHECKING:
    import argparse

EXIT_USAGE = 2


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) == 1 and self.crawler_process is not None:
            try:
                spidercls = self.crawler_process.spider_loader.load(args[0])
            except KeyError:
                spidercls = None  # Scrapy's own command reports it
            if spidercls is not None and issubclass(spidercls, WebSpider):
                settings = self.crawler_process.settings.copy()
                spidercls.update_settings(settings)
                try:
                    apply_spider_arguments(settings, dict(opts.spargs))
                    check_settings(settings)
                except ConfigError as exc:
                    print(f"webspider: error: {exc}", file=sys.stderr)
                    self.exitcode = EXIT_USAGE
                    return
        super().run(args, opts)
