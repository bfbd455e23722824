"""The plain Scrapy baseline: a CrawlSpider following the tags webspider does.

    cd /some/dir/without/scrapy.cfg && \
    python -m scrapy runspider bench/baseline_spider.py -a start_url=URL -O items.jsonl

What a Scrapy user would write in ten minutes, and no more: one Rule with a
LinkExtractor over the same elements and attributes as webspider's
LINK_RULES (so stylesheets, scripts and images are followed too:
deny_extensions=[]), restricted to the start URL's host, with webspider's
concurrency and robots.txt defaults and INFO logging (Scrapy's DEBUG default
logs a line per request, which would be an unfair handicap). Everything else
is Scrapy's default: RFPDupeFilter, LIFO queues, the stock middlewares.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

TAGS = (
    "a", "area", "link", "img", "script", "iframe", "frame", "source",
    "video", "audio", "embed", "input", "object", "track",
)  # fmt: skip
ATTRS = ("href", "src", "data", "poster")


class BaselineSpider(CrawlSpider):
    name = "baseline"
    custom_settings = {
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "INFO",
        "FEED_EXPORT_ENCODING": "utf-8",
    }
    rules = (
        Rule(
            LinkExtractor(tags=TAGS, attrs=ATTRS, deny_extensions=[]),
            callback="parse_item",
            follow=True,
        ),
    )

    def __init__(self, start_url: str, *args: Any, **kwargs: Any) -> None:
        self.start_urls = [start_url]
        self.allowed_domains = [urlsplit(start_url).hostname or ""]
        super().__init__(*args, **kwargs)

    def parse_start_url(self, response: Any, **kwargs: Any) -> Any:
        return self.parse_item(response)

    def parse_item(self, response: Any) -> dict[str, Any]:
        return {
            "url": response.url,
            "status": response.status,
            "size": len(response.body),
        }
