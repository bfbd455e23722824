"""The address policy's options, read and validated once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from webspider import settings as defaults
from webspider.addresses.policy import BadNetworkError, IPNetwork, parse_networks
from webspider.config import ConfigError, Options, get_bool
from webspider.utils.urllist import split_list

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

#: the download handler that applies the policy to every connection
HANDLER = "webspider.addresses.handler.AddressGuardHandler"


def get_allowed_networks(settings: BaseSettings) -> tuple[IPNetwork, ...]:
    """WEBSPIDER_ADDRESSES_ALLOW: a list, or ``a,b`` / ``@file`` on the
    command line."""
    try:
        return parse_networks(split_list(settings.get("WEBSPIDER_ADDRESSES_ALLOW")))
    except BadNetworkError as exc:
        raise ConfigError(f"WEBSPIDER_ADDRESSES_ALLOW: {exc}") from None


def check_handlers(settings: BaseSettings) -> None:
    """The policy is applied where connections are made: by webspider's
    download handler. Another http(s) handler (HTTP/2, a browser) resolves
    names where the policy cannot see them, so it is refused rather than
    crawled with the policy quietly off."""
    handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
    ours = load_object(HANDLER)
    for scheme in ("http", "https"):
        path = handlers.get(scheme)
        handler = load_object(path) if path else None
        if not (isinstance(handler, type) and issubclass(handler, ours)):
            raise ConfigError(
                f"DOWNLOAD_HANDLERS[{scheme!r}] is {path!r}: the address policy "
                f"needs {HANDLER} (or a subclass) there; set "
                "WEBSPIDER_ADDRESSES_ENABLED=0 to use another handler without it"
            )


@dataclass(frozen=True)
class AddressOptions(Options):
    """What the address policy reads (README, "Hostile web")."""

    enabled: bool = defaults.WEBSPIDER_ADDRESSES_ENABLED
    #: networks allowed although special-purpose
    allowed: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        enabled = get_bool(settings, "WEBSPIDER_ADDRESSES_ENABLED")
        if enabled:
            check_handlers(settings)
        return cls(enabled=enabled, allowed=get_allowed_networks(settings))
