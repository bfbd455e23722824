"""webspider.logformatter: the two DEBUG lines a page are skipped unless
LOG_LEVEL prints them; everything else is Scrapy's."""

from __future__ import annotations

import logging

import pytest
from scrapy import Spider
from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse, Request
from scrapy.settings import Settings
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from webspider.logformatter import LogFormatter


def formatter(**values: object) -> LogFormatter:
    settings = Settings()
    settings.setmodule("webspider.settings", priority="project")
    settings.update(values, priority="cmdline")
    crawler = get_crawler(Spider, settings_dict=settings.copy_to_dict())
    cls = load_object(crawler.settings["LOG_FORMATTER"])
    return cls.from_crawler(crawler)


def page() -> tuple[Request, HtmlResponse]:
    request = Request("http://127.0.0.1/a")
    return request, HtmlResponse(request.url, body=b"<p>", request=request)


def test_the_project_uses_it():
    assert isinstance(formatter(), LogFormatter)


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"LOG_LEVEL": "INFO"},
        {"LOG_LEVEL": "warning"},
        {"LOG_LEVEL": 20},
        {"LOG_LEVEL": "DEBUG", "LOG_ENABLED": False},
    ],
)
def test_skipped_when_debug_is_not_printed(values):
    f = formatter(**values)
    request, response = page()
    spider = Spider("s")
    assert f.crawled(request, response, spider) is None
    assert f.scraped({"url": request.url}, response, spider) is None


@pytest.mark.parametrize("level", ["DEBUG", "debug", 10, 5])
def test_scrapy_s_messages_at_debug(level):
    f = formatter(LOG_LEVEL=level)
    request, response = page()
    spider = Spider("s")
    crawled = f.crawled(request, response, spider)
    scraped = f.scraped({"url": request.url}, response, spider)
    assert crawled is not None and crawled["level"] == logging.DEBUG
    assert crawled["msg"].startswith("Crawled")
    assert crawled["args"]["status"] == 200
    assert scraped is not None and scraped["msg"].startswith("Scraped from")


def test_other_messages_are_scrapy_s():
    settings = Settings()
    settings.setmodule("webspider.settings", priority="project")
    crawler = get_crawler(Spider, settings_dict=settings.copy_to_dict())
    f = LogFormatter.from_crawler(crawler)
    spider = Spider.from_crawler(crawler, name="s")
    request, response = page()
    dropped = f.dropped({"url": request.url}, DropItem("no"), response, spider)
    assert dropped["level"] == logging.WARNING
    assert dropped["msg"].startswith("Dropped")
