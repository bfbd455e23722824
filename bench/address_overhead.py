"""Per-request cost of the address policy and the credentials middleware.

    PYTHONPATH=$PWD python bench/address_overhead.py

Times (CPU), per request, best of 5 runs of 100,000 requests: the address
middleware's check once its host's verdict is known (a name, and an address
written in the URL: no DNS lookup either way, one per host is made before),
the download handler's part (the ticket, the check that the resolver is
installed), and the credentials middleware for a request to the start
origin and to another origin carrying an Authorization header. The per-host
lookup and the per-connection judgement are not per request (connections
are pooled) and are left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from scrapy.utils.reactor import install_reactor

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")

from scrapy import Request, Spider  # noqa: E402
from scrapy.settings import Settings  # noqa: E402
from scrapy.utils.httpobj import urlparse_cached  # noqa: E402
from scrapy.utils.misc import build_from_crawler  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from webspider.addresses.dns import name_key  # noqa: E402
from webspider.addresses.guard import AddressGuard  # noqa: E402
from webspider.addresses.middleware import AddressMiddleware  # noqa: E402
from webspider.addresses.resolver import TICKET, Ticket, installed_resolver  # noqa: E402
from webspider.credentials.middleware import CredentialsMiddleware  # noqa: E402

N = 100_000

settings = Settings()
settings.setmodule("webspider.settings")
settings.set("WEBSPIDER_START_URLS", "http://docs.example/")
crawler = get_crawler(Spider, settings.copy_to_dict())
crawler.spider = Spider("bench")
addresses = build_from_crawler(AddressMiddleware, crawler)
credentials = build_from_crawler(CredentialsMiddleware, crawler)
guard = AddressGuard.of(crawler)
guard.verdicts["docs.example"] = None  # looked up once per host, before
guard.verdicts["127.0.0.1"] = None


def drive(coroutine) -> None:  # type: ignore[no-untyped-def]
    # the known-verdict path never waits: run it without an event loop
    try:
        coroutine.send(None)
    except StopIteration:
        return
    raise RuntimeError("the check waited")


def handler_part(request: Request) -> None:
    # what AddressGuardHandler.download_request adds before Scrapy's own
    installed_resolver()
    host = urlparse_cached(request).hostname or ""
    token = TICKET.set(Ticket(guard, name_key(host), None))
    TICKET.reset(token)


def best(label: str, requests: list[Request], step: Callable[[Request], None]) -> None:
    runs = []
    for _ in range(5):
        # CPU time: on a shared machine, wall time measures the neighbours
        start = time.process_time()
        for request in requests:
            step(request)
        runs.append((time.process_time() - start) / len(requests) * 1e6)
    print(f"{label:<58} {min(runs):6.2f} µs/request")


def fresh(url: str, **headers: str) -> list[Request]:
    requests = [Request(f"{url}{i}", headers=headers or None) for i in range(N)]
    for request in requests:
        urlparse_cached(request)  # as earlier middlewares (scope…) have
    return requests


best("(nothing: the loop itself)", fresh("http://docs.example/p"), lambda r: None)
best(
    "(for scale: building the Request)",
    fresh("http://docs.example/p"),
    lambda r: Request(r.url, callback=None),
)


best(
    "address middleware, a name (verdict known)",
    fresh("http://docs.example/p"),
    lambda r: drive(addresses.process_request(r)),
)
best(
    "address middleware, an address (verdict known)",
    fresh("http://127.0.0.1/p"),
    lambda r: drive(addresses.process_request(r)),
)
best(
    "download handler: ticket and resolver check",
    fresh("http://docs.example/p"),
    handler_part,
)
best(
    "credentials middleware, start origin",
    fresh("http://docs.example/p"),
    credentials.process_request,
)
best(
    "credentials middleware, other origin, Authorization removed",
    fresh("http://other.example/p", Authorization="Bearer t"),
    credentials.process_request,
)
