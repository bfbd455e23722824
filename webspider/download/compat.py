"""What Scrapy's own download handlers do around a download, done the same
for the lean client (scrapy.utils._download_handlers is a private module):
the same signals, response, messages and timeout error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import DownloadTimeoutError, StopDownload
from scrapy.responsetypes import responsetypes
from twisted.python.failure import Failure as TwistedFailure

if TYPE_CHECKING:
    from ipaddress import IPv4Address, IPv6Address

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from webspider.download.connection import Exchange


def timeout_error(request: Request, timeout: float) -> DownloadTimeoutError:
    url = request.url.partition("#")[0]
    return DownloadTimeoutError(f"Getting {url} took longer than {timeout} seconds.")


def check_stop_download(
    signal: object, crawler: Crawler, request: Request, **kwargs: object
) -> StopDownload | None:
    """Send ``signal``; the StopDownload a receiver raised, if any."""
    results = crawler.signals.send_catch_log(
        signal=signal, request=request, spider=crawler.spider, **kwargs
    )
    for _, result in results:
        if isinstance(result, TwistedFailure) and isinstance(
            result.value, StopDownload
        ):
            return result.value
    return None


def make_response(
    ex: Exchange, ip_address: IPv4Address | IPv6Address | None
) -> Response:
    """The exchange's response, its class chosen from the headers, URL and
    body as Scrapy's handlers choose it; a stop that fails raises."""
    head, headers, url = ex.head, ex.headers, ex.request.url
    assert head is not None and headers is not None
    body = b"".join(ex.body)
    cls = responsetypes.from_args(headers=headers, url=url, body=body)
    response = cls(
        url=url,
        status=head.status,
        headers=headers,
        body=body,
        flags=ex.flags,
        ip_address=ip_address,
        protocol=head.protocol,
    )
    stop = ex.stop
    if stop is not None:
        response.flags.append("download_stopped")
        if stop.fail:
            stop.response = response
            raise stop
    return response


def normalize_bind_address(
    value: str | tuple[str, int] | None,
) -> tuple[str, int] | None:
    """``DOWNLOAD_BIND_ADDRESS`` or meta ``bindaddress``: a host (any port)
    or (host, port)."""
    if isinstance(value, str):
        return (value, 0)
    return None if value is None else (value[0], int(value[1]))


def get_maxsize_msg(size: int, limit: int, request: Request, *, expected: bool) -> str:
    prefix = "Expected to receive" if expected else "Received"
    return (
        f"{prefix} {size} bytes which is larger than download "
        f"max size ({limit}) in request {request}."
    )


def get_warnsize_msg(size: int, limit: int, request: Request, *, expected: bool) -> str:
    prefix = "Expected to receive" if expected else "Received"
    return (
        f"{prefix} {size} bytes which is larger than download "
        f"warn size ({limit}) in request {request}."
    )


def get_dataloss_msg(url: str) -> str:
    return (
        f"Got data loss in {url}. If you want to process broken "
        "responses set the setting DOWNLOAD_FAIL_ON_DATALOSS = False"
        " -- This message won't be shown in further requests"
    )
