from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.server import TestServer


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
