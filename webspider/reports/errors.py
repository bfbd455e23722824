"""Name why a request failed, with a short stable code for broken-links.jsonl.

Codes (documented in docs/reports.md):

- ``dns_error``           the host name does not resolve
- ``connection_refused``  nothing listens on the port
- ``connection_lost``     the connection was reset or closed before a full answer
- ``timeout``             no answer within DOWNLOAD_TIMEOUT
- ``tls_error``           the TLS handshake failed
- ``too_many_redirects``  more than REDIRECT_MAX_TIMES redirects
- ``redirect_loop``       a redirect back to a URL of the same chain
- ``redirect_scheme``     a redirect to a scheme webspider does not fetch (ftp:, …)
- ``redirect_invalid``    a 3xx answer that could not be followed (no Location)
- ``download_error``      anything else that stopped the download
- ``missing_anchor``      the page exists but has no element with the fragment's id
- ``robots_unreachable``  its origin's robots.txt could not be fetched, so RFC 9309
                          forbids the URL (the host is down or refuses us); a
                          host whose name does not resolve is ``dns_error``
"""

from __future__ import annotations

from scrapy.exceptions import (
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from twisted.internet import error as net
from twisted.internet.defer import TimeoutError as DeferTimeoutError
from twisted.web.client import ResponseFailed, ResponseNeverReceived

from webspider.exceptions import DNS_FAILURES, HostUnresolved, RobotsUnreachable
from webspider.utils.url import FETCHABLE_SCHEMES, url_scheme

DNS_ERROR = "dns_error"
CONNECTION_REFUSED = "connection_refused"
CONNECTION_LOST = "connection_lost"
TIMEOUT = "timeout"
TLS_ERROR = "tls_error"
TOO_MANY_REDIRECTS = "too_many_redirects"
REDIRECT_LOOP = "redirect_loop"
REDIRECT_SCHEME = "redirect_scheme"
REDIRECT_INVALID = "redirect_invalid"
DOWNLOAD_ERROR = "download_error"
MISSING_ANCHOR = "missing_anchor"
#: robots.txt of the URL's origin could not be fetched (the host refuses us,
#: or answers 5xx): nothing there was requested. (A host name that does not
#: resolve is DNS_ERROR, robots.txt or not.)
ROBOTS_UNREACHABLE = "robots_unreachable"

_BY_TYPE: tuple[
    tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...
] = (
    (DNS_FAILURES, DNS_ERROR),
    ((net.ConnectionRefusedError, DownloadConnectionRefusedError), CONNECTION_REFUSED),
    (
        (
            net.TimeoutError,
            net.TCPTimedOutError,
            DeferTimeoutError,
            DownloadTimeoutError,
        ),
        TIMEOUT,
    ),
    (
        (
            net.ConnectionLost,
            net.ConnectionDone,
            net.ConnectionAborted,
            ConnectionResetError,
            ResponseDataLossError,
        ),
        CONNECTION_LOST,
    ),
)

#: Scrapy's RedirectMiddleware gives up with this IgnoreRequest message.
MAX_REDIRECTS_MESSAGE = "max redirections reached"


def classify_error(exc: BaseException) -> str | None:
    """The code for a download failure; None for an IgnoreRequest that is a
    decision (robots.txt, scope…), not a failure."""
    if isinstance(exc, RobotsUnreachable):
        return ROBOTS_UNREACHABLE
    if isinstance(exc, HostUnresolved):
        return DNS_ERROR
    if isinstance(exc, IgnoreRequest):
        return TOO_MANY_REDIRECTS if str(exc) == MAX_REDIRECTS_MESSAGE else None
    if isinstance(exc, DownloadFailedError) and exc.__cause__ is not None:
        # Scrapy (2.19) wraps Twisted's exceptions; the cause says more.
        return classify_error(exc.__cause__)
    if isinstance(exc, (ResponseNeverReceived, ResponseFailed)):
        # Twisted wraps the real reasons: the first one that says more wins.
        for reason in getattr(exc, "reasons", ()):
            code = classify_error(reason.value)
            if code is not None and code != DOWNLOAD_ERROR:
                return code
        return CONNECTION_LOST
    for types, code in _BY_TYPE:
        if isinstance(exc, types):
            return code
    name = type(exc).__name__.lower()
    if "ssl" in name or "tls" in name or "certificate" in name:
        return TLS_ERROR
    return DOWNLOAD_ERROR


def classify_redirect(location: str | None) -> str:
    """The code for a 3xx answer that reached the spider (was not followed)."""
    if not location:
        return REDIRECT_INVALID
    scheme = url_scheme(location)
    if scheme and scheme not in FETCHABLE_SCHEMES:
        return REDIRECT_SCHEME
    return REDIRECT_INVALID


def describe(exc: BaseException) -> str:
    """A one-line message for people (Twisted's wrapped reasons unwrapped)."""
    if isinstance(exc, DownloadFailedError) and exc.__cause__ is not None:
        return describe(exc.__cause__)
    if isinstance(exc, (RobotsUnreachable, HostUnresolved)):
        return f"robots.txt: {exc.reason}"
    reasons = getattr(exc, "reasons", None)
    if reasons:
        return "; ".join(describe(r.value) for r in reasons)
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())[:300]
