"""The crawl's log formatter: Scrapy's, without two records a page nobody sees.

Scrapy logs every response ("Crawled (200) <GET …>") and every item
("Scraped from <200 …>") at DEBUG. Its loggers pass DEBUG on to the root
logger whatever ``LOG_LEVEL`` says, and only the handler drops the record:
each message still builds a LogRecord and walks the stack for its caller,
about 75 µs a page on small pages — 1.4 % of the crawl's CPU samples
(bench/smallpages.py), for two lines that ``LOG_LEVEL=INFO`` (webspider's
default) never prints. With ``LOG_LEVEL`` above DEBUG, or ``LOG_ENABLED``
off, those two messages are skipped (Scrapy skips a message whose
formatter returns None); at DEBUG they are Scrapy's, unchanged. Every other
message (dropped items, errors) is Scrapy's. Set by LOG_FORMATTER
(webspider.settings).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.logformatter import LogFormatter as ScrapyLogFormatter

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.logformatter import LogFormatterResult
    from twisted.python.failure import Failure
    from typing_extensions import Self


class LogFormatter(ScrapyLogFormatter):
    def __init__(self, debug: bool = True) -> None:
        self.debug = debug

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        level = settings.get("LOG_LEVEL")
        if isinstance(level, str):
            level = logging.getLevelName(level.upper())
        debug = settings.getbool("LOG_ENABLED") and (
            not isinstance(level, int) or level <= logging.DEBUG
        )
        return cls(debug)

    # Scrapy's engine and scraper skip a None; its annotation does not say so.
    def crawled(  # type: ignore[override]
        self, request: Request, response: Response, spider: Spider
    ) -> LogFormatterResult | None:
        if not self.debug:
            return None
        return super().crawled(request, response, spider)

    def scraped(  # type: ignore[override]
        self, item: Any, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult | None:
        if not self.debug:
            return None
        return super().scraped(item, response, spider)
