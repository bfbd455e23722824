"""Spider arguments, the settings behind them, typed getters and the crawl's
options objects.

Every spider argument (``-a name=value``) is also a ``WEBSPIDER_*`` setting;
the argument wins. Components read only settings, so this is the one place
that maps one onto the other. Each feature reads its settings into one
frozen options object (``ScopeOptions``, ``MirrorOptions``…, beside the
feature) whose ``of(settings)`` parses them once per crawl; their field
defaults are the values listed in webspider.settings, the one place a
default is written. webspider.validation runs every feature's checks before
the crawl starts, so that bad input is one clear line (the ``crawl`` command
prints it and exits with status 2).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from webspider import settings as defaults
from webspider.utils.url import (
    BadURLError,
    Origin,
    mask_password,
    normalize_seed,
    origin_of,
    split_userinfo,
)
from webspider.utils.urllist import URLListError, read_list

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

_T = TypeVar("_T")

#: Spider arguments beat every other source, including ``-s`` (priority 40).
ARGUMENT_PRIORITY = 50

#: spider argument → setting. Later components add their own rows.
SPIDER_ARGUMENTS: dict[str, str] = {
    "start_urls": "WEBSPIDER_START_URLS",
    "url": "WEBSPIDER_START_URLS",
    "scope": "WEBSPIDER_SCOPE",
    "output": "WEBSPIDER_OUTPUT",
    "robots": "ROBOTSTXT_OBEY",
    "max_depth": "WEBSPIDER_DEPTH_MAX",
    "max_rounds": "WEBSPIDER_DEPTH_MAX_ROUNDS",
    "defer": "WEBSPIDER_DEPTH_DEFER",
    "shuffle": "WEBSPIDER_SHUFFLE_ENABLED",
    "restart": "WEBSPIDER_STATE_RESTART",
    "export_noindex": "WEBSPIDER_EXPORT_NOINDEX",
    "check_external": "WEBSPIDER_CHECK_EXTERNAL",
    "check_anchors": "WEBSPIDER_CHECK_ANCHORS",
    "fail_on_broken": "WEBSPIDER_FAIL_ON_BROKEN",
    "include": "WEBSPIDER_INCLUDE",
    "exclude": "WEBSPIDER_EXCLUDE",
    "exclude_re": "WEBSPIDER_EXCLUDE_RE",
    "sitemaps": "WEBSPIDER_ROBOTSTXT_SITEMAPS",
    "log_skipped": "WEBSPIDER_LOG_SKIPPED",
    "mirror": "WEBSPIDER_MIRROR",
    "convert_links": "WEBSPIDER_MIRROR_CONVERT_LINKS",
    "keep_originals": "WEBSPIDER_MIRROR_KEEP_ORIGINALS",
    "http_client": "WEBSPIDER_HTTP_CLIENT",
}


class ConfigError(ValueError):
    """Bad input from the user; the message is one line that says what to fix."""


def apply_spider_arguments(settings: BaseSettings, kwargs: dict[str, Any]) -> None:
    """Move known spider arguments into settings (removing them from kwargs).

    Unknown arguments are an error, since a typo (``max_dept=2``) would
    otherwise be silently ignored; names starting with ``_`` (scrapyd's
    ``_job``) pass through to the spider untouched."""
    unknown = sorted(k for k in kwargs if k not in SPIDER_ARGUMENTS and k[:1] != "_")
    if unknown:
        known = ", ".join(sorted(SPIDER_ARGUMENTS))
        raise ConfigError(
            f"unknown spider argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} (known: {known})"
        )
    if "start_urls" in kwargs and "url" in kwargs:
        # one would replace the other without a word
        raise ConfigError(
            "give one of start_urls and url (its alias), not both: "
            "-a start_urls=https://a.org/,https://b.org/"
        )
    for name in list(kwargs):
        if name in SPIDER_ARGUMENTS:
            settings.set(SPIDER_ARGUMENTS[name], kwargs.pop(name), ARGUMENT_PRIORITY)


def listed_default(name: str, fallback: _T) -> _T:
    """The default webspider.settings lists for ``name`` (``fallback`` for a
    setting it does not list, such as one of Scrapy's)."""
    return getattr(defaults, name, fallback)


def get_bool(settings: BaseSettings, name: str, default: bool | None = None) -> bool:
    """A boolean setting, with a clear error instead of Scrapy's ValueError;
    the default is the one webspider.settings lists."""
    if default is None:
        default = bool(listed_default(name, False))
    raw = settings.get(name, default)
    # Scrapy's getbool takes any number (bool(int("2"))): a 2 or a -1 would
    # silently mean "on"
    if isinstance(raw, (str, int, float)) and raw in _BOOLEANS:
        return settings.getbool(name, default)
    raise ConfigError(f"{label(name)} must be 1/0, true/false, got {raw!r}")


#: the on/off values a setting may have (True == 1 and False == 0 are in it)
_BOOLEANS = frozenset({True, False, "1", "0", "true", "false", "True", "False"})


def get_int(
    settings: BaseSettings,
    name: str,
    default: int | None = None,
    *,
    minimum: int | None = None,
) -> int:
    if default is None:
        default = listed_default(name, 0)
    raw = settings.get(name, default)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{label(name)} must be a whole number, got {raw!r}"
        ) from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{label(name)} must be at least {minimum}, got {value}")
    return value


def get_float(
    settings: BaseSettings,
    name: str,
    default: float | None = None,
    *,
    minimum: float = 0.0,
) -> float:
    if default is None:
        default = listed_default(name, 0.0)
    raw = settings.get(name, default)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{label(name)} must be a number, got {raw!r}") from None
    if not value >= minimum:  # also rejects NaN
        raise ConfigError(f"{label(name)} must be at least {minimum}, got {raw!r}")
    return value


def label(setting: str) -> str:
    args = [a for a, s in SPIDER_ARGUMENTS.items() if s == setting]
    return f"{args[0]} ({setting})" if args else setting


#: id(frozen settings) -> parser -> what it parsed (dropped with the settings)
_parsed: dict[int, dict[Callable[[BaseSettings], Any], Any]] = {}


def once(parse: Callable[[BaseSettings], _T], settings: BaseSettings) -> _T:
    """``parse(settings)``, parsed once per crawl.

    Once Scrapy has frozen a crawl's settings they can no longer change, so
    what was parsed from them is kept with them; settings that may still
    change (a test's, or a crawler's while its extensions are built) are
    parsed on every call."""
    if not settings.frozen:
        return parse(settings)
    key = id(settings)
    kept = _parsed.get(key)
    if kept is None:
        kept = _parsed[key] = {}
        weakref.finalize(settings, _parsed.pop, key, None)
    if parse not in kept:
        kept[parse] = parse(settings)
    return kept[parse]  # type: ignore[no-any-return]


class Options:
    """A feature's options: subclasses are frozen dataclasses with a
    ``from_settings`` that validates (raising ConfigError)."""

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        raise NotImplementedError

    @classmethod
    def of(cls, settings: BaseSettings) -> Self:
        """The options of a crawl's settings, parsed once per crawl."""
        return once(cls.from_settings, settings)


# "(compatible; ExampleBot/0.1; +https://…)": a bot in a browser's clothes
_COMPATIBLE_RE = re.compile(r"\(\s*compatible\s*;\s*([A-Za-z_-]+)", re.IGNORECASE)
_TOKEN_RE = re.compile(r"\s*([A-Za-z_-]+)")


@lru_cache(maxsize=64)
def product_token(user_agent: str) -> str:
    """The crawler's name in a User-Agent, lower-cased, as robots.txt groups
    and ``<meta name=…>`` address it (RFC 9309 2.2.1: letters, ``-`` and
    ``_``): ``webspider/0.1 (+https://…)`` → ``webspider``, and, for a
    browser-style User-Agent, the bot's own name, not the browser's:
    ``Mozilla/5.0 (compatible; ExampleBot/0.1; +https://…)`` →
    ``examplebot``. "" when there is none."""
    match = _COMPATIBLE_RE.search(user_agent) or _TOKEN_RE.match(user_agent)
    return match.group(1).lower() if match else ""


def get_product_token(settings: BaseSettings) -> str:
    """The product token of ``ROBOTSTXT_USER_AGENT`` (as in Scrapy), else of
    ``USER_AGENT``."""
    user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
    return product_token(str(user_agent or ""))


def get_start_urls(settings: BaseSettings) -> list[str]:
    """The start URLs, as requested (without any ``user:password@``)."""
    return list(once(_start_urls, settings))


def get_given_start_urls(settings: BaseSettings) -> list[str]:
    """The start URLs as given (normalised), ``user:password@`` included:
    what ``keep_start_urls`` keeps. Never to be written or logged."""
    return list(once(_given_start_urls, settings))


def _start_urls(settings: BaseSettings) -> tuple[str, ...]:
    return tuple(split_userinfo(url)[0] for url in once(_given_start_urls, settings))


def _given_start_urls(settings: BaseSettings) -> tuple[str, ...]:
    raw = settings.get("WEBSPIDER_START_URLS")
    try:
        values = read_list(raw)
    except URLListError as exc:
        raise ConfigError(str(exc)) from None
    if not values:
        raise ConfigError(
            "start_urls is required: scrapy crawl webspider "
            "-a start_urls=https://example.org/ (or -a url=…, or @file)"
        )
    urls: list[str] = []
    for value in values:
        try:
            urls.append(normalize_seed(value))
        except BadURLError as exc:
            raise ConfigError(str(exc)) from None
    return tuple(urls)


def keep_start_urls(settings: BaseSettings, urls: tuple[str, ...]) -> None:
    """Put the start URLs, once read, in place of what named them (an
    ``@file`` of start URLs may be a deferred.jsonl of millions of lines):
    every later reader of these settings gets the list, and the file is read
    once per crawl. ``urls`` are the given start URLs (get_given_start_urls:
    their credentials must survive)."""
    if settings.frozen:
        return  # read once already: once() keeps what frozen settings gave
    priority = settings.getpriority("WEBSPIDER_START_URLS") or 0
    settings.set("WEBSPIDER_START_URLS", list(urls), priority=priority)


def get_output_dir(settings: BaseSettings) -> Path:
    return once(_output_dir, settings)


def _output_dir(settings: BaseSettings) -> Path:
    raw = settings.get("WEBSPIDER_OUTPUT")
    if raw is None:
        raw = defaults.WEBSPIDER_OUTPUT
    if not str(raw).strip():
        # it meant the default folder, without a word
        raise ConfigError(
            f"output must not be empty (the default is {defaults.WEBSPIDER_OUTPUT})"
        )
    path = Path(str(raw)).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"output {str(raw)!r} exists and is not a folder")
    return path


def get_start_credentials(settings: BaseSettings) -> dict[Origin, tuple[str, str]]:
    """(user, password) of the start URLs given with ``user:password@``, by
    origin (the first start URL of an origin with them wins)."""
    credentials: dict[Origin, tuple[str, str]] = {}
    for url in once(_given_start_urls, settings):
        bare, user, password = split_userinfo(url)
        if user is not None:
            credentials.setdefault(origin_of(bare), (user, password))
    return credentials


@dataclass(frozen=True)
class CrawlConfig(Options):
    """The crawl-wide choices every component shares, validated once."""

    #: as requested: without their ``user:password@``
    start_urls: tuple[str, ...]
    output: Path
    #: as given, ``user:password@`` included (never written or logged)
    given_start_urls: tuple[str, ...] = ()

    @property
    def shown_start_urls(self) -> tuple[str, ...]:
        """As given, passwords masked (``user:***@``): for reports and logs."""
        return tuple(mask_password(url) for url in self.given_start_urls)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        return cls(
            start_urls=once(_start_urls, settings),
            output=get_output_dir(settings),
            given_start_urls=once(_given_start_urls, settings),
        )
