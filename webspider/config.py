"""Spider arguments, the settings behind them, and their validation.

Every spider argument (``-a name=value``) is also a ``WEBSPIDER_*`` setting;
the argument wins. Components read only settings, so this is the one place
that maps one onto the other. ``check_settings`` validates everything a crawl
would otherwise discover deep inside a component, so that bad input is one
clear line at start (the ``crawl`` command prints it and exits with status 2).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webspider.utils.prefixes import BadPrefixError, PrefixSet, prefix_reason
from webspider.utils.url import BadURLError, normalize_seed
from webspider.utils.urllist import URLListError, read_list

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

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
}

SCOPES = ("host", "domain", "all")
SCOPE_ALIASES = {"local": "host"}


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
    for name in list(kwargs):
        if name in SPIDER_ARGUMENTS:
            settings.set(SPIDER_ARGUMENTS[name], kwargs.pop(name), ARGUMENT_PRIORITY)


def get_bool(settings: BaseSettings, name: str, default: bool = False) -> bool:
    """A boolean setting, with a clear error instead of Scrapy's ValueError."""
    try:
        return settings.getbool(name, default)
    except ValueError:
        raise ConfigError(
            f"{_label(name)} must be 1/0, true/false, got {settings.get(name)!r}"
        ) from None


def get_int(
    settings: BaseSettings, name: str, default: int = 0, *, minimum: int | None = None
) -> int:
    raw = settings.get(name, default)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{_label(name)} must be a whole number, got {raw!r}"
        ) from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{_label(name)} must be at least {minimum}, got {value}")
    return value


def get_float(
    settings: BaseSettings, name: str, default: float = 0.0, *, minimum: float = 0.0
) -> float:
    raw = settings.get(name, default)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{_label(name)} must be a number, got {raw!r}") from None
    if not value >= minimum:  # also rejects NaN
        raise ConfigError(f"{_label(name)} must be at least {minimum}, got {raw!r}")
    return value


def _label(setting: str) -> str:
    args = [a for a, s in SPIDER_ARGUMENTS.items() if s == setting]
    return f"{args[0]} ({setting})" if args else setting


def get_start_urls(settings: BaseSettings) -> list[str]:
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
    return urls


def get_scope(settings: BaseSettings) -> str:
    raw = str(settings.get("WEBSPIDER_SCOPE") or "host").strip().lower()
    scope = SCOPE_ALIASES.get(raw, raw)
    if scope not in SCOPES:
        accepted = ", ".join([*SCOPES, *SCOPE_ALIASES])
        raise ConfigError(
            f"unknown scope {settings.get('WEBSPIDER_SCOPE')!r} (accepted: {accepted})"
        )
    return scope


def get_output_dir(settings: BaseSettings) -> Path:
    raw = settings.get("WEBSPIDER_OUTPUT") or "output"
    path = Path(str(raw)).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"output {str(raw)!r} exists and is not a folder")
    return path


def get_prefixes(settings: BaseSettings, name: str) -> PrefixSet:
    """An include/exclude prefix list (``a,b`` or ``@file``, or a list)."""
    try:
        values = read_list(settings.get(name))
        case_sensitive = settings.getbool("WEBSPIDER_PREFIXES_CASE_SENSITIVE", False)
        return PrefixSet(values, case_sensitive)
    except (URLListError, BadPrefixError) as exc:
        raise ConfigError(f"{_label(name)}: {exc}") from None
    except ValueError:
        raise ConfigError(
            "WEBSPIDER_PREFIXES_CASE_SENSITIVE must be 1/0, true/false, got "
            f"{settings.get('WEBSPIDER_PREFIXES_CASE_SENSITIVE')!r}"
        ) from None


def get_exclude_patterns(settings: BaseSettings) -> tuple[re.Pattern[str], ...]:
    """``exclude_re``: one regex from the command line (commas are regex
    syntax, so it is not split), or a list of them in the settings."""
    raw = settings.get("WEBSPIDER_EXCLUDE_RE")
    if not raw:
        return ()
    sources = [raw] if isinstance(raw, str) else list(raw)
    patterns: list[re.Pattern[str]] = []
    for source in sources:
        try:
            patterns.append(re.compile(str(source)))
        except re.error as exc:
            label = _label("WEBSPIDER_EXCLUDE_RE")
            raise ConfigError(
                f"{label}: invalid regex {str(source)!r}: {exc}"
            ) from None
    return tuple(patterns)


def filter_reason(
    url: str,
    include: PrefixSet,
    exclude: PrefixSet,
    patterns: tuple[re.Pattern[str], ...],
) -> str | None:
    """Why the user's lists keep ``url`` from being requested (the reason
    names of webspider.skips), in the order the middlewares decide it."""
    reason = prefix_reason(url, include, exclude)
    if reason is not None:
        return reason
    if any(p.search(url) for p in patterns):
        return "exclude_re"
    return None


def get_dropped_seeds(settings: BaseSettings) -> list[tuple[str, str]]:
    """Start URLs the include/exclude lists and exclude_re keep out, with
    their reason; a ConfigError when that leaves no start URL at all."""
    urls = get_start_urls(settings)
    include = get_prefixes(settings, "WEBSPIDER_INCLUDE")
    exclude = get_prefixes(settings, "WEBSPIDER_EXCLUDE")
    patterns = get_exclude_patterns(settings)
    dropped: list[tuple[str, str]] = []
    for url in urls:
        reason = filter_reason(url, include, exclude, patterns)
        if reason is not None:
            dropped.append((url, reason))
    if dropped and len(dropped) == len(urls):
        names = ", ".join(f"{url} ({reason})" for url, reason in dropped)
        raise ConfigError(
            f"no start URL is left after include/exclude/exclude_re: {names}"
        )
    return dropped


#: RFC 9309 2.5: a robots.txt parsing limit MUST be at least 500 KiB.
ROBOTS_MIN_PARSE_BYTES = 500 * 1024
#: RFC 9309 2.4: robots.txt SHOULD NOT be cached for more than 24 hours.
ROBOTS_MAX_CACHE_TTL = 24 * 3600
CRAWL_DELAY_OVER_MAX_CHOICES = ("cap", "skip")


def robots_settings(settings: BaseSettings) -> tuple[int, float, int, float]:
    """(max bytes, cache ttl, retry times, retry delay), validated."""
    max_bytes = get_int(
        settings, "WEBSPIDER_ROBOTSTXT_MAX_BYTES", minimum=ROBOTS_MIN_PARSE_BYTES
    )
    ttl = get_float(
        settings, "WEBSPIDER_ROBOTSTXT_CACHE_TTL", ROBOTS_MAX_CACHE_TTL, minimum=1
    )
    if ttl > ROBOTS_MAX_CACHE_TTL:
        raise ConfigError(
            f"WEBSPIDER_ROBOTSTXT_CACHE_TTL must be at most {ROBOTS_MAX_CACHE_TTL} "
            f"(24 hours, RFC 9309), got {ttl:g}"
        )
    retries = get_int(settings, "WEBSPIDER_ROBOTSTXT_RETRY_TIMES", 3, minimum=0)
    delay = get_float(settings, "WEBSPIDER_ROBOTSTXT_RETRY_DELAY", 5.0)
    return max_bytes, ttl, retries, delay


def politeness_settings(settings: BaseSettings) -> tuple[float, str, float, int]:
    """(crawl-delay cap, over-cap choice, pause cap, retry budget), validated."""
    cap = get_float(settings, "WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX", 60.0)
    over = str(settings.get("WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX") or "cap")
    if over.strip().lower() not in CRAWL_DELAY_OVER_MAX_CHOICES:
        raise ConfigError(
            "WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX must be cap or skip, "
            f"got {over!r}"
        )
    pause = get_float(settings, "WEBSPIDER_POLITENESS_RETRY_AFTER_MAX", 600.0)
    retries = get_int(settings, "WEBSPIDER_POLITENESS_RETRY_TIMES", 5, minimum=0)
    return cap, over.strip().lower(), pause, retries


_OFF = frozenset({"0", "false", "no", "off", "none", ""})


def get_mirror_dir(settings: BaseSettings) -> Path | None:
    """The mirror root, or None when mirroring is off (``mirror=0``).

    The default (setting left empty) is ``<output>/mirror``. The mirror must
    not hold the crawl's own state: it may not be the output folder or a
    folder above it, nor be or hold JOBDIR."""
    raw = settings.get("WEBSPIDER_MIRROR")
    output = get_output_dir(settings)
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        path = output / "mirror"
    elif raw is False or str(raw).strip().lower() in _OFF:
        return None
    elif raw is True or str(raw).strip().lower() in ("1", "true", "yes", "on"):
        path = output / "mirror"
    else:
        path = Path(str(raw)).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"mirror {str(path)!r} exists and is not a folder")
    mirror = path.resolve()
    if mirror == output.resolve() or mirror in output.resolve().parents:
        raise ConfigError(
            f"mirror {str(path)!r} must not be the output folder or hold it "
            f"(try -a mirror={output / 'mirror'})"
        )
    jobdir = settings.get("JOBDIR")
    if jobdir:
        job = Path(str(jobdir)).expanduser().resolve()
        if job == mirror or mirror in job.parents or job in mirror.parents:
            raise ConfigError(
                f"mirror {str(path)!r} and JOBDIR {str(jobdir)!r} must not overlap"
            )
    return path


@dataclass(frozen=True)
class CrawlConfig:
    """The crawl-wide choices every component shares, validated once."""

    start_urls: tuple[str, ...]
    scope: str
    output: Path

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CrawlConfig:
        return cls(
            start_urls=tuple(get_start_urls(settings)),
            scope=get_scope(settings),
            output=get_output_dir(settings),
        )


@dataclass(frozen=True)
class DepthOptions:
    """Depth cap and rounds (see docs/depth-and-rounds.md)."""

    #: None: no cap
    max_depth: int | None
    #: rounds after the first; None: unlimited
    max_rounds: int | None
    #: defer over-depth links to a later round (else drop them)
    defer: bool
    #: strict breadth-first levels (the scheduler's level barrier)
    strict: bool


def _optional_int(settings: BaseSettings, name: str) -> int | None:
    raw = settings.get(name)
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none")):
        return None
    return get_int(settings, name, minimum=0)


def get_depth_options(settings: BaseSettings) -> DepthOptions:
    if get_int(settings, "DEPTH_LIMIT", 0):
        raise ConfigError(
            "DEPTH_LIMIT is not used by webspider: use -a max_depth=N "
            "(over-depth links are deferred to a later round; -a defer=0 drops them)"
        )
    options = DepthOptions(
        max_depth=_optional_int(settings, "WEBSPIDER_DEPTH_MAX"),
        max_rounds=_optional_int(settings, "WEBSPIDER_DEPTH_MAX_ROUNDS"),
        defer=get_bool(settings, "WEBSPIDER_DEPTH_DEFER", True),
        strict=get_bool(settings, "WEBSPIDER_DEPTH_STRICT", True),
    )
    if options.max_depth is not None and options.defer:
        from scrapy.utils.misc import load_object  # noqa: PLC0415

        from webspider.scheduler.scheduler import RoundScheduler  # noqa: PLC0415

        scheduler = load_object(settings["SCHEDULER"])
        # (issubclass would not do: Scrapy's scheduler metaclass duck-types it)
        if RoundScheduler not in getattr(scheduler, "__mro__", ()):
            raise ConfigError(
                "max_depth defers links to later rounds, which needs SCHEDULER = "
                "webspider.scheduler.scheduler.RoundScheduler (or -a defer=0)"
            )
    return options


def check_report_settings(settings: BaseSettings) -> None:
    """The settings of the reports (docs/reports.md)."""
    # Imported here: those modules import this one.
    from webspider.extensions.duplicates import get_ignore_patterns  # noqa: PLC0415
    from webspider.extensions.progress import get_mode  # noqa: PLC0415

    for name in (
        "WEBSPIDER_BROKEN_LINKS_ENABLED",
        "WEBSPIDER_CHECK_EXTERNAL",
        "WEBSPIDER_CHECK_ANCHORS",
        "WEBSPIDER_FAIL_ON_BROKEN",
        "WEBSPIDER_DUPLICATES_ENABLED",
        "WEBSPIDER_DUPLICATES_NORMALIZE",
        "WEBSPIDER_REPORT_ENABLED",
    ):
        get_bool(settings, name)
    get_int(settings, "WEBSPIDER_BROKEN_LINKS_MAX_REFERRERS", 1000, minimum=1)
    get_int(settings, "WEBSPIDER_REPORT_LARGEST", 20, minimum=0)
    get_float(settings, "WEBSPIDER_REPORT_INTERVAL", 60.0)
    get_float(settings, "WEBSPIDER_PROGRESS_REFRESH", 2.0, minimum=0.05)
    get_float(settings, "WEBSPIDER_PROGRESS_INTERVAL", 60.0, minimum=0.05)
    get_mode(settings)
    get_ignore_patterns(settings)


#: Validators that components register for their own settings, run by
#: ``check_settings`` before the crawl starts. Each raises ConfigError.
VALIDATORS: list[Callable[[BaseSettings], object]] = [
    CrawlConfig.from_settings,
    lambda s: get_bool(s, "ROBOTSTXT_OBEY", True),
    get_depth_options,
    check_report_settings,
    get_dropped_seeds,
    robots_settings,
    politeness_settings,
    get_mirror_dir,
    lambda s: get_int(s, "WEBSPIDER_MIRROR_THREAD_SIZE", 0, minimum=0),
]


def check_typed_settings(settings: BaseSettings) -> None:
    """Every WEBSPIDER_* setting whose default is a bool, int or float must
    parse as one: many are only read deep inside a component, where a bad
    value would otherwise be a traceback in the middle of the crawl."""
    from webspider import settings as defaults  # noqa: PLC0415 - avoids a cycle

    for name in dir(defaults):
        if not name.startswith("WEBSPIDER_"):
            continue
        default = getattr(defaults, name)
        if isinstance(default, bool):
            get_bool(settings, name, default)
        elif isinstance(default, int):
            get_int(settings, name, default)
        elif isinstance(default, float):
            get_float(settings, name, default)


#: plain booleans and numbers, whichever component reads them
VALIDATORS.append(check_typed_settings)


def check_settings(settings: BaseSettings) -> None:
    for validate in VALIDATORS:
        validate(settings)
