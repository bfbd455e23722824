"""The credentials options, read and validated once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import (
    ConfigError,
    Options,
    get_bool,
    get_start_credentials,
    get_start_urls,
)
from webspider.utils.url import BadURLError, Origin, normalize_seed, origin_of
from webspider.utils.urllist import split_list

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


def get_extra_origins(settings: BaseSettings) -> frozenset[Origin]:
    """WEBSPIDER_CREDENTIALS_ORIGINS: URLs (``https://docs.example.org``), a
    list or ``a,b``; each stands for its origin."""
    origins: set[Origin] = set()
    for value in split_list(settings.get("WEBSPIDER_CREDENTIALS_ORIGINS")):
        try:
            origins.add(origin_of(normalize_seed(value)))
        except BadURLError as exc:
            raise ConfigError(f"WEBSPIDER_CREDENTIALS_ORIGINS: {exc}") from None
    return frozenset(origins)


@dataclass(frozen=True)
class CredentialsOptions(Options):
    """What the credentials middleware reads."""

    enabled: bool = defaults.WEBSPIDER_CREDENTIALS_ENABLED
    #: the origins the crawl's credentials belong to: the start URLs' and
    #: WEBSPIDER_CREDENTIALS_ORIGINS
    origins: frozenset[Origin] = frozenset()
    #: (user, password) given in start URLs, by origin
    basic_auth: tuple[tuple[Origin, tuple[str, str]], ...] = ()

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        starts = {origin_of(url) for url in get_start_urls(settings)}
        return cls(
            enabled=get_bool(settings, "WEBSPIDER_CREDENTIALS_ENABLED"),
            origins=frozenset(starts) | get_extra_origins(settings),
            basic_auth=tuple(get_start_credentials(settings).items()),
        )
