"""Per-page cost of the page-directives middleware, against the one parse.

    cd /work/wt/issue4 && PYTHONPATH=$PWD python bench/directives_overhead.py [N]

N: every N-th of the page's 150 links has rel="nofollow" (0: none). Times the
spider's parse() of an already parsed page with and without the middleware
(process_spider_input + per-output filtering), best of 5 runs of 300 pages.
"""

from __future__ import annotations

import sys
import time

from scrapy.utils.reactor import install_reactor

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")

from scrapy import Request  # noqa: E402
from scrapy.http import HtmlResponse  # noqa: E402
from scrapy.settings import Settings  # noqa: E402
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware  # noqa: E402
from scrapy.utils.misc import build_from_crawler  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from webspider.directives.middleware import PageDirectivesMiddleware  # noqa: E402
from webspider.page.response import parsed_page  # noqa: E402
from webspider.spiders.webspider import WebSpider  # noqa: E402

EVERY = int(sys.argv[1]) if len(sys.argv) > 1 else 0
N = 300
LINKS = "".join(
    f'<a href="/p{i}"{" rel=nofollow" if EVERY and i % EVERY == 0 else ""}>link {i}</a>'
    for i in range(150)
)
BODY = (
    "<html><head><title>T</title>"
    '<meta name="robots" content="index, follow"><meta name="viewport" content="x">'
    f"</head><body>{LINKS}</body></html>"
).encode()

settings = Settings()
settings.setmodule("webspider.settings")
crawler = get_crawler(WebSpider, settings.copy_to_dict())
spider = WebSpider()
spider._set_crawler(crawler)
crawler.spider = spider
spider.seen_urls = set()  # as in a crawl: links are canonicalised anyway
directives = build_from_crawler(PageDirectivesMiddleware, crawler)
noop = BaseSpiderMiddleware(crawler)


def responses() -> list[HtmlResponse]:
    result = []
    for i in range(N):
        url = f"http://site.test/page{i}"
        response = HtmlResponse(
            url, body=BODY, encoding="utf-8", request=Request(url, meta={"depth": 1})
        )
        parsed_page(response)
        result.append(response)
    return result


def run(mw: BaseSpiderMiddleware | None) -> float:
    pages = responses()
    start = time.perf_counter()
    for response in pages:
        if mw is None:
            list(spider.parse(response))
            continue
        if mw is directives:
            directives.process_spider_input(response)
        for output in spider.parse(response):
            mw._get_processed(output, response)
    return (time.perf_counter() - start) / N * 1e3


start = time.perf_counter()
responses()
parse_ms = (time.perf_counter() - start) / N * 1e3
bare = min(run(None) for _ in range(5))
with_noop = min(run(noop) for _ in range(5))
with_directives = min(run(directives) for _ in range(5))
print(
    f"150 links, rel=nofollow every {EVERY or '-'}: parse {parse_ms:.3f} ms/page, "
    f"spider.parse {bare:.3f} ms, with a no-op spider middleware {with_noop:.3f} ms, "
    f"with PageDirectivesMiddleware {with_directives:.3f} ms "
    f"(+{with_directives - bare:.3f} ms)"
)
