import pytest
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from twisted.internet import error as net
from twisted.python.failure import Failure
from twisted.web.client import ResponseNeverReceived

from webspider.exceptions import HostUnresolved, RobotsUnreachable, is_dns_failure
from webspider.reports import errors


def wrapped(cause: BaseException) -> DownloadFailedError:
    try:
        raise DownloadFailedError(str(cause)) from cause
    except DownloadFailedError as exc:
        return exc


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (CannotResolveHostError("x"), "dns_error"),
        (net.DNSLookupError("x"), "dns_error"),
        (DownloadConnectionRefusedError("x"), "connection_refused"),
        (DownloadTimeoutError("x"), "timeout"),
        (net.TCPTimedOutError(), "timeout"),
        (
            wrapped(ResponseNeverReceived([Failure(net.ConnectionDone())])),
            "connection_lost",
        ),
        (
            wrapped(ResponseNeverReceived([Failure(net.ConnectionLost())])),
            "connection_lost",
        ),
        (ConnectionResetError(), "connection_lost"),
        (IgnoreRequest("max redirections reached"), "too_many_redirects"),
        (IgnoreRequest("Forbidden by robots.txt"), None),
        (RobotsUnreachable("http://a.test/", "HTTP 503"), "robots_unreachable"),
        (HostUnresolved("http://a.test/", "no address"), "dns_error"),
        (ValueError("odd"), "download_error"),
    ],
)
def test_classify_error(exc, code):
    assert errors.classify_error(exc) == code


@pytest.mark.parametrize(
    ("location", "code"),
    [
        ("ftp://example.org/f", "redirect_scheme"),
        ("mailto:someone@example.org", "redirect_scheme"),
        (None, "redirect_invalid"),
        ("", "redirect_invalid"),
    ],
)
def test_classify_redirect(location, code):
    assert errors.classify_redirect(location) == code


def test_describe_unwraps_twisted_reasons():
    exc = wrapped(ResponseNeverReceived([Failure(net.ConnectionDone())]))
    assert "closed cleanly" in errors.describe(exc)


@pytest.mark.parametrize(
    ("exc", "dns"),
    [
        (CannotResolveHostError("x"), True),
        (net.DNSLookupError("x"), True),
        (wrapped(net.DNSLookupError("x")), True),
        (wrapped(DownloadConnectionRefusedError("x")), False),
        (DownloadFailedError("no cause"), False),
        (DownloadTimeoutError("x"), False),
    ],
)
def test_is_dns_failure(exc, dns):
    assert is_dns_failure(exc) is dns


def test_describe_names_the_robots_txt_download():
    exc = HostUnresolved("http://a.test/", "CannotResolveHostError: no address")
    assert errors.describe(exc) == "robots.txt: CannotResolveHostError: no address"
