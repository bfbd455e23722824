from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from hypothesis import settings as hypothesis_settings

from tests.support.server import TestServer
from webspider.frontier.sqlitelock import release_held_locks

#: redis_server (session) and redis_url (flushed per test): a real redis-server
pytest_plugins = ["tests.support.redis_server"]

# Property tests explore the same examples on every run: CI must not turn red
# on a new random example nobody is there to look at. Run with
# HYPOTHESIS_PROFILE=explore (random, more examples) to hunt for new cases.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", max_examples=20_000)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(trylast=True)  # after pytest-twisted installed the reactor
def pytest_configure(config: pytest.Config) -> None:
    # pytest-twisted runs the reactor with Twisted's signal handlers: a
    # SIGTERM sent to pytest (a CI job cancelled, a `pkill`) would only stop
    # the reactor at the next in-process crawl, and every later test would
    # fail with "illegal switch in blockon", then "twisted reactor has
    # stopped" (thousands of failures, none of them the cause). The default
    # action instead: pytest ends at once, killed by SIGTERM.
    from twisted.internet import reactor  # noqa: PLC0415, TID251 - installed now

    def default_sigterm() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    reactor.callWhenRunning(default_sigterm)  # type: ignore[attr-defined]
    # A shell that runs the suite in the background (`.ci/run &`) starts it
    # with SIGINT ignored, every process inherits that, and Python then keeps
    # Ctrl-C ignored: the tests that stop a crawl or `scrapy combine` with
    # SIGINT saw it run to its end (exit 0). A handled SIGINT is reset to the
    # default in the processes the tests start, as in a user's terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


#: fixtures that start a server: a test using one is end-to-end
SERVER_FIXTURES = {"server", "other_server", "www_server"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # test_e2e_* modules are end-to-end by name (a new one needs no
    # pytestmark to be left out of the fast set); this also catches a crawl
    # against the test server anywhere else, so `-m "not e2e"` stays fast.
    for item in items:
        if item.path.name.startswith("test_e2e_") or SERVER_FIXTURES.intersection(
            getattr(item, "fixturenames", ())
        ):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _state_locks_released() -> Iterator[None]:
    """A test that checks the settings (which holds the state's lock until
    a crawl takes it over) without a crawl leaves no lock file open."""
    yield
    release_held_locks()


@pytest.fixture
def server() -> Iterator[TestServer]:
    """An empty site at http://site.test:<port>/ (add routes in the test)."""
    with TestServer(name="site.test") as srv:
        yield srv


@pytest.fixture
def other_server() -> Iterator[TestServer]:
    """A second host, http://other.test:<port>/ (out of scope for site.test)."""
    with TestServer(name="other.test") as srv:
        yield srv


@pytest.fixture
def www_server() -> Iterator[TestServer]:
    """A subdomain host, http://www.site.test:<port>/ (in scope=domain)."""
    with TestServer(name="www.site.test") as srv:
        yield srv


@pytest.fixture(params=["twisted", "lean"])
def http_client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test runs with each HTTP client (WEBSPIDER_HTTP_CLIENT), in-process
    crawls (tests.support.crawl) and ``scrapy crawl`` (tests.support.cli)
    alike: for the tests of what a download meets (hostile servers, errors,
    stops, bounds), which both clients must answer alike."""
    # imported here: tests.support.crawl imports the reactor, which
    # pytest-twisted installs after this module is read
    from tests.support import cli  # noqa: PLC0415
    from tests.support.crawl import TEST_SETTINGS  # noqa: PLC0415

    client: str = request.param
    monkeypatch.setitem(TEST_SETTINGS, "WEBSPIDER_HTTP_CLIENT", client)
    monkeypatch.setattr(cli, "CLIENT_ARGS", ("-s", f"WEBSPIDER_HTTP_CLIENT={client}"))
    return client
