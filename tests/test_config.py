import pytest
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from webspider.config import (
    ARGUMENT_PRIORITY,
    ConfigError,
    CrawlConfig,
    apply_spider_arguments,
    get_float,
    get_int,
    get_product_token,
    product_token,
)
from webspider.directives.options import DirectivesOptions
from webspider.frontier.options import DepthOptions
from webspider.mirror.options import MirrorOptions
from webspider.pageworker.options import PageWorkerOptions
from webspider.politeness.options import PolitenessOptions
from webspider.reports.options import ReportOptions
from webspider.scope.options import ScopeOptions, get_scope
from webspider.spiders.webspider import WebSpider
from webspider.validation import check_known_settings, check_settings


def project_settings(**values):
    settings = Settings()
    settings.setmodule("webspider.settings", priority="project")
    settings.setdict(values, priority="cmdline")
    return settings


def test_spider_argument_beats_setting():
    settings = project_settings(WEBSPIDER_SCOPE="domain")
    kwargs = {"scope": "all", "_job": "abc"}
    apply_spider_arguments(settings, kwargs)
    assert settings["WEBSPIDER_SCOPE"] == "all"
    assert settings.getpriority("WEBSPIDER_SCOPE") == ARGUMENT_PRIORITY
    assert kwargs == {"_job": "abc"}  # scrapyd's own arguments pass through


def test_settings_alone_configure_a_crawl(tmp_path):
    settings = project_settings(
        WEBSPIDER_START_URLS=["example.org", "http://b.test/x"],
        WEBSPIDER_SCOPE="LOCAL",
        WEBSPIDER_OUTPUT=str(tmp_path),
    )
    config = CrawlConfig.from_settings(settings)
    assert config.start_urls == ("https://example.org/", "http://b.test/x")
    assert config.output == tmp_path
    assert get_scope(settings) == "host"


def test_unknown_argument_lists_known_ones():
    with pytest.raises(ConfigError, match=r"unknown spider argument depht \(known: "):
        apply_spider_arguments(project_settings(), {"depht": "2"})


def test_output_must_be_a_folder(tmp_path):
    file = tmp_path / "file"
    file.write_text("x")
    settings = project_settings(
        WEBSPIDER_START_URLS="http://a.test/", WEBSPIDER_OUTPUT=str(file)
    )
    with pytest.raises(ConfigError, match="is not a folder"):
        check_settings(settings)


@pytest.mark.parametrize(
    ("value", "message"),
    [("x", "whole number"), ("-1", "at least 0")],
)
def test_typed_getters(value, message):
    settings = Settings({"WEBSPIDER_X": value})
    with pytest.raises(ConfigError, match=message):
        get_int(settings, "WEBSPIDER_X", minimum=0)


def test_float_getter_rejects_nan():
    with pytest.raises(ConfigError, match="at least"):
        get_float(Settings({"WEBSPIDER_X": "nan"}), "WEBSPIDER_X")


def test_in_process_bad_input_raises_config_error():
    crawler = get_crawler(WebSpider, {"WEBSPIDER_START_URLS": []})
    with pytest.raises(ConfigError, match="start_urls is required"):
        WebSpider.from_crawler(crawler)


@pytest.mark.parametrize(
    "options",
    [
        DepthOptions,
        DirectivesOptions,
        PageWorkerOptions,
        PolitenessOptions,
        ReportOptions,
    ],
)
def test_options_defaults_are_the_listed_settings(options):
    # The fields' defaults are webspider.settings' values: reading the
    # project's settings gives the same object as building it bare.
    assert options.from_settings(project_settings()) == options()


def test_options_are_parsed_once_per_crawl(tmp_path):
    settings = project_settings(
        WEBSPIDER_START_URLS=["http://a.test/"],
        WEBSPIDER_INCLUDE="http://a.test/",
        WEBSPIDER_OUTPUT=str(tmp_path),
    )
    # settings that may still change are read again on every call
    assert ScopeOptions.of(settings) is not ScopeOptions.of(settings)
    settings.freeze()
    assert ScopeOptions.of(settings) is ScopeOptions.of(settings)
    assert MirrorOptions.of(settings).root == tmp_path / "mirror"
    assert MirrorOptions.of(settings) is MirrorOptions.of(settings)


def test_an_unknown_setting_names_the_closest_known_one():
    settings = project_settings(WEBSPIDER_REPORT_INTERVALS="5")
    with pytest.raises(ConfigError) as info:
        check_known_settings(settings)
    assert str(info.value) == (
        "unknown setting WEBSPIDER_REPORT_INTERVALS "
        "(did you mean WEBSPIDER_REPORT_INTERVAL?)"
    )
    check_known_settings(project_settings(WEBSPIDER_REPORT_INTERVAL="5"))


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("webspider/0.1.0 (+https://github.com/webspider/webspider)", "webspider"),
        ("WebSpider", "webspider"),
        ("MyBot/2.0", "mybot"),
        ("  mybot (compatible)", "mybot"),
        # RFC 9309 2.2.1's own example: the bot's token, not the browser's
        (
            "Mozilla/5.0 (compatible; ExampleBot/0.1; +https://example.org/bot)",
            "examplebot",
        ),
        (
            "Mozilla/5.0 (Linux; Android 6.0.1) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/1.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; +https://g.co/b)",
            "googlebot",
        ),
        ("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0", "mozilla"),
        ("Foo_Bar-Baz/1", "foo_bar-baz"),
        ("bot2000/1.0", "bot"),  # a token is letters, "-" and "_"
        ("", ""),
        ("/1.0", ""),
    ],
)
def test_product_token(user_agent, token):
    assert product_token(user_agent) == token


def test_product_token_of_the_settings():
    settings = Settings({"USER_AGENT": "Mozilla/5.0 (compatible; ExampleBot/0.1)"})
    assert get_product_token(settings) == "examplebot"
    settings.set("ROBOTSTXT_USER_AGENT", "OtherBot")
    assert get_product_token(settings) == "otherbot"
