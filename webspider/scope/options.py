"""The scope options: host/domain/all, the include/exclude prefix lists and
exclude_re, read and validated from the settings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import ConfigError, Options, get_bool, get_start_urls, label, once
from webspider.scope.prefixes import BadPrefixError, PrefixSet, prefix_reason
from webspider.utils.urllist import URLListError, read_list

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


SCOPES = ("host", "domain", "all")


SCOPE_ALIASES = {"local": "host"}


def get_scope(settings: BaseSettings) -> str:
    given = settings.get("WEBSPIDER_SCOPE")
    # an empty -a scope= is refused, not taken for the default
    raw = str(defaults.WEBSPIDER_SCOPE if given is None else given).strip().lower()
    scope = SCOPE_ALIASES.get(raw, raw)
    if scope not in SCOPES:
        accepted = ", ".join([*SCOPES, *SCOPE_ALIASES])
        raise ConfigError(
            f"unknown scope {settings.get('WEBSPIDER_SCOPE')!r} (accepted: {accepted})"
        )
    return scope


def get_prefixes(settings: BaseSettings, name: str) -> PrefixSet:
    """An include/exclude prefix list (``a,b`` or ``@file``, or a list)."""
    try:
        values = read_list(settings.get(name))
        case_sensitive = settings.getbool(
            "WEBSPIDER_PREFIXES_CASE_SENSITIVE",
            defaults.WEBSPIDER_PREFIXES_CASE_SENSITIVE,
        )
        return PrefixSet(values, case_sensitive)
    except (URLListError, BadPrefixError) as exc:
        raise ConfigError(f"{label(name)}: {exc}") from None
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
            raise ConfigError(
                f"{label('WEBSPIDER_EXCLUDE_RE')}: invalid regex {str(source)!r}: {exc}"
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


@dataclass(frozen=True)
class ScopeOptions(Options):
    """What the scope middlewares read (see docs/scope-and-politeness.md)."""

    #: host, domain or all
    scope: str = defaults.WEBSPIDER_SCOPE
    prefixes_enabled: bool = defaults.WEBSPIDER_PREFIXES_ENABLED
    include: PrefixSet = field(default_factory=lambda: PrefixSet(()))
    exclude: PrefixSet = field(default_factory=lambda: PrefixSet(()))
    #: exclude_re, compiled
    patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        return cls(
            scope=get_scope(settings),
            prefixes_enabled=get_bool(settings, "WEBSPIDER_PREFIXES_ENABLED"),
            include=get_prefixes(settings, "WEBSPIDER_INCLUDE"),
            exclude=get_prefixes(settings, "WEBSPIDER_EXCLUDE"),
            patterns=get_exclude_patterns(settings),
        )


def get_dropped_seeds(settings: BaseSettings) -> list[tuple[str, str]]:
    """Start URLs the include/exclude lists and exclude_re keep out, with
    their reason; a ConfigError when that leaves no start URL at all."""
    return list(once(_dropped_seeds, settings))


def _dropped_seeds(settings: BaseSettings) -> tuple[tuple[str, str], ...]:
    urls = get_start_urls(settings)
    options = ScopeOptions.of(settings)
    include, exclude, patterns = options.include, options.exclude, options.patterns
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
    return tuple(dropped)
