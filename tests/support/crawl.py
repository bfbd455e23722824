"""Run the real webspider in-process (pytest-twisted runs the asyncio reactor).

``result = await crawl(tmp_path, start_urls=server.url("/"))`` returns the
items scraped, the crawler's final stats and the output folder; the crawl
writes its files under ``tmp_path / "out"``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from twisted.internet import reactor  # noqa: TID251 - pytest-twisted installed it

from tests.support.resolver import RESOLVER, LoopbackTestResolver
from webspider.spiders.webspider import WebSpider

#: settings every in-process test crawl uses on top of webspider.settings
TEST_SETTINGS: dict[str, Any] = {
    "TWISTED_DNS_RESOLVER": RESOLVER,
    "LOG_LEVEL": "INFO",
    "RETRY_TIMES": 0,
    "DOWNLOAD_TIMEOUT": 10,
    # an unreachable robots.txt is retried after 5, 10, 20 s by default
    "WEBSPIDER_ROBOTSTXT_RETRY_DELAY": 0.05,
    # The page worker is a second Python process per crawl, costing more than
    # reading a test site, and which process reads a page depends on timing:
    # tests about it turn it on; subprocess crawls (tests/support/cli.py) keep
    # the default, as users run it.
    "WEBSPIDER_PAGE_WORKER": False,
}


@dataclass
class CrawlResult:
    items: list[dict[str, Any]]
    stats: dict[str, Any]
    output: Path
    crawler: Crawler
    errors: list[str] = field(default_factory=list)

    def by_url(self) -> dict[str, dict[str, Any]]:
        return {item["url"]: item for item in self.items}

    def exported(self, name: str = "pages.jsonl") -> list[dict[str, Any]]:
        """JSON lines of an output file, as written to disk."""
        path = self.output / name
        return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def make_settings(output: Path, **overrides: Any) -> Settings:
    settings = Settings()
    settings.setmodule("webspider.settings", priority="project")
    settings.setdict(TEST_SETTINGS, priority="project")
    settings.set("WEBSPIDER_OUTPUT", str(output), priority="project")
    settings.setdict(overrides, priority="cmdline")
    return settings


def install_test_resolver(crawler: Crawler) -> None:
    # CrawlerProcess installs TWISTED_DNS_RESOLVER when it starts the reactor; in tests
    # pytest-twisted owns the reactor, so install it here.
    resolver = LoopbackTestResolver.from_crawler(crawler, reactor)  # type: ignore[arg-type]
    resolver.install_on_reactor()


async def crawl(
    tmp_path: Path,
    spidercls: type[WebSpider] = WebSpider,
    settings: dict[str, Any] | None = None,
    **spider_args: Any,
) -> CrawlResult:
    output = tmp_path / "out"
    crawler = Crawler(spidercls, make_settings(output, **(settings or {})))
    items: list[dict[str, Any]] = []
    errors: list[str] = []

    def scraped(item: Any) -> None:
        items.append(ItemAdapter(item).asdict())

    def spider_error(failure: Any) -> None:
        errors.append(failure.getTraceback())

    install_test_resolver(crawler)
    crawler.signals.connect(scraped, signal=signals.item_scraped)
    crawler.signals.connect(spider_error, signal=signals.spider_error)
    await crawler.crawl_async(**spider_args)
    assert crawler.stats is not None
    assert not errors, errors[0]
    return CrawlResult(items, crawler.stats.get_stats(), output, crawler, errors)
