"""Benchmark (not a test): what the crawl's process pays to build a request.

    PYTHONPATH=<checkout> python bench/request_build.py [--repeat 7]

µs a call, best of ``--repeat``, of what runs once for each request of a
small-page crawl outside the commit:

- ``from_stored``: the Request made of a request the crawl state hands back
  (webspider.frontier.requestdata), with the Referer header a link's has;
- ``link make``: a link's Request (webspider.requests.link_requests);
- ``StoredRequest.origin``: the origin SQLiteState.add files a request
  under, for 4,000 distinct URLs (urlsplit's cache does not hold them).

The URLs are the synthetic site's (bench/scale/synth.py). Run it for two
checkouts, alternating, to compare (bench/README.md, branch ``perpage17``).
"""

from __future__ import annotations

import sys
import timeit

from scrapy import Spider

import webspider
from webspider.frontier.requestdata import from_stored
from webspider.frontier.state import StoredRequest
from webspider.requests import link_requests

REPEAT = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 7
SITE = "http://127.0.0.1:45527"


class Pages(Spider):
    name = "pages"

    def parse(self, response: object) -> None:
        pass

    def on_error(self, failure: object) -> None:
        pass


def best(call: object, number: int, per: int = 1) -> float:
    times = timeit.repeat(call, number=number, repeat=REPEAT)  # type: ignore[arg-type]
    return min(times) / number / per * 1e6


def main() -> None:
    spider = Pages()
    url = f"{SITE}/p/3/3002.html"
    referer = f"{SITE}/p/3/3130.html"
    stored = StoredRequest(
        key=url,
        url=url,
        depth=3,
        referer=referer,
        meta={"_webspider_referer_header": True},
    )
    make = link_requests(spider, depth=3, referer=referer)
    requests = [
        StoredRequest(key=u, url=u)
        for u in (f"{SITE}/p/{i % 10}/{i}.html" for i in range(4000))
    ]

    def origins() -> None:
        for request in requests:
            request.origin  # noqa: B018

    print(f"webspider: {webspider.__file__}")
    print(f"from_stored: {best(lambda: from_stored(stored, spider), 20000):.2f} µs")
    print(f"link make: {best(lambda: make(url, 'page'), 20000):.2f} µs")
    print(f"StoredRequest.origin: {best(origins, 5, len(requests)):.2f} µs")


if __name__ == "__main__":
    main()
