"""webspider.frontier.options.set_shared_concurrent_items: a worker on a
shared state takes SHARED_CONCURRENT_ITEMS, unless CONCURRENT_ITEMS was
given."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from webspider import settings as defaults
from webspider.frontier.options import (
    SHARED_CONCURRENT_ITEMS,
    set_shared_concurrent_items,
)

REDIS = "redis://127.0.0.1:6379/0"


def project(**cmdline: object) -> Settings:
    settings = Settings()
    settings.setmodule(defaults, priority="project")
    settings.setdict(cmdline, priority="cmdline")
    return settings


@pytest.mark.parametrize(
    ("cmdline", "items"),
    [
        ({}, defaults.CONCURRENT_ITEMS),  # the embedded state
        ({"WEBSPIDER_STATE": " "}, defaults.CONCURRENT_ITEMS),
        ({"WEBSPIDER_STATE": REDIS}, SHARED_CONCURRENT_ITEMS),
        ({"WEBSPIDER_STATE": REDIS, "CONCURRENT_ITEMS": "2"}, 2),  # given
        ({"WEBSPIDER_STATE": REDIS, "CONCURRENT_ITEMS": "1"}, 1),
        ({"CONCURRENT_ITEMS": "5"}, 5),
    ],
)
def test_concurrent_items(cmdline, items):
    settings = project(**cmdline)
    set_shared_concurrent_items(settings)
    assert settings.getint("CONCURRENT_ITEMS") == items


def test_a_projects_own_value_is_kept():
    settings = project(WEBSPIDER_STATE=REDIS)
    settings.set("CONCURRENT_ITEMS", 4, priority="project")
    set_shared_concurrent_items(settings)
    assert settings.getint("CONCURRENT_ITEMS") == 4


def test_the_shared_value_is_more_than_the_default():
    # what the shared state needs it for: a page's links in fewer turns
    assert SHARED_CONCURRENT_ITEMS > defaults.CONCURRENT_ITEMS
