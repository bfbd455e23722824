"""The download client's options, read and validated once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from webspider import settings as defaults
from webspider.config import ConfigError, Options, label

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

#: Scrapy's HTTP/1.1 handler (Twisted's web client), or webspider's lean one
CLIENTS = ("twisted", "lean")
#: the download handler that sends requests to the client chosen
HANDLER = "webspider.download.handler.HTTPClientHandler"


@dataclass(frozen=True)
class DownloadOptions(Options):
    """What the download handler reads (README, "Settings")."""

    client: str = defaults.WEBSPIDER_HTTP_CLIENT

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        raw = settings.get("WEBSPIDER_HTTP_CLIENT", defaults.WEBSPIDER_HTTP_CLIENT)
        client = str(raw).strip().lower()
        if client not in CLIENTS:
            raise ConfigError(
                f"{label('WEBSPIDER_HTTP_CLIENT')} must be twisted or lean, got {raw!r}"
            )
        if client == "lean":
            check_handler(settings)
        return cls(client=client)


def check_handler(settings: BaseSettings) -> None:
    """The lean client is reached through webspider's handler: another
    ``DOWNLOAD_HANDLERS["http"]`` would leave the setting without effect,
    without a word."""
    path = settings.getwithbase("DOWNLOAD_HANDLERS").get("http")
    handler = load_object(path) if path else None
    if not (isinstance(handler, type) and issubclass(handler, load_object(HANDLER))):
        raise ConfigError(
            f"{label('WEBSPIDER_HTTP_CLIENT')}: lean needs DOWNLOAD_HANDLERS['http'] "
            f"to be {HANDLER} (or a subclass), not {path!r}"
        )
