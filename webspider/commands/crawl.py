"""``scrapy crawl``, with bad input answered in one line.

Scrapy's own ``crawl`` command reports a bad spider argument with a traceback
(raised deep inside the crawler start-up). This one validates every setting
and spider argument first (webspider.config.check_settings), before Scrapy
starts its crawler process and logging, and, when something is wrong, prints
``webspider: error: <what to fix>`` to stderr and exits with status 2 before
anything is crawled or written.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.settings import Settings
from scrapy.spiderloader import get_spider_loader

from webspider.config import ConfigError, apply_spider_arguments, check_settings
from webspider.spiders.webspider import WebSpider

if TYPE_CHECKING:
    import argparse

EXIT_USAGE = 2


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if len(args) != 1:
            return  # Scrapy's own usage message
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
            check_settings(settings)
        except ConfigError as exc:
            print(f"webspider: error: {exc}", file=sys.stderr)
            sys.exit(EXIT_USAGE)
