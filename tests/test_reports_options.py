"""Validation of the report settings (webspider.config.check_report_settings):
one clear line before the crawl."""

import pytest
from scrapy.settings import Settings

from webspider.config import ConfigError
from webspider.reports.options import (
    check_report_settings,
    get_ignore_patterns,
    get_mode,
)


def settings(**values) -> Settings:
    s = Settings()
    s.setmodule("webspider.settings")
    s.setdict(values, priority="cmdline")
    return s


def test_defaults_are_valid():
    check_report_settings(settings())


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"WEBSPIDER_PROGRESS": "fancy"}, "WEBSPIDER_PROGRESS must be one of"),
        (
            {"WEBSPIDER_CHECK_EXTERNAL": "maybe"},
            "check_external (WEBSPIDER_CHECK_EXTERNAL)",
        ),
        (
            {"WEBSPIDER_REPORT_INTERVAL": "soon"},
            "WEBSPIDER_REPORT_INTERVAL must be a number",
        ),
        ({"WEBSPIDER_BROKEN_LINKS_MAX_REFERRERS": "0"}, "at least 1"),
        ({"WEBSPIDER_DUPLICATES_IGNORE_RE": "[unclosed"}, "not a JSON list"),
        ({"WEBSPIDER_DUPLICATES_IGNORE_RE": "a(b"}, "bad regular expression"),
    ],
)
def test_bad_values(values, message):
    with pytest.raises(
        ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        check_report_settings(settings(**values))


@pytest.mark.parametrize(
    ("raw", "patterns"),
    [
        ("[]", []),
        ('["a,b", "c"]', ["a,b", "c"]),
        ("token=\\w+", ["token=\\w+"]),
        (["x", "y"], ["x", "y"]),
    ],
)
def test_ignore_patterns(raw, patterns):
    got = get_ignore_patterns(settings(WEBSPIDER_DUPLICATES_IGNORE_RE=raw))
    assert [p.pattern for p in got] == patterns


def test_progress_mode_is_case_insensitive():
    assert get_mode(settings(WEBSPIDER_PROGRESS=" LOG ")) == "log"
