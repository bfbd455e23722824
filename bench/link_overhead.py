"""Per-link cost of the crawl outside the parse: the docs' links replayed.

    cd /work/wt/perlink && PYTHONPATH=$PWD python bench/link_overhead.py [ROOT]

Parses every HTML file under ROOT (default: Debian's python3.11-doc) once,
untimed, then times (process time) what the crawl does with each page's
links after the parse, in crawl order and with a growing seen-set as the
scheduler would keep it: the page-directives middleware's input step, the
links_extracted signal (broken-links ledger), and the spider's follow_links
(seen-set, scope, skip recording, Request building). Nothing is served or
downloaded; compare two checkouts by running it alternately with each on
PYTHONPATH and taking medians.
"""

from __future__ import annotations

import gc
import logging
import sys
import tempfile
import time
from pathlib import Path

from scrapy.utils.reactor import install_reactor

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")

from scrapy import Request  # noqa: E402
from scrapy.http import HtmlResponse  # noqa: E402
from scrapy.settings import Settings  # noqa: E402
from scrapy.utils.misc import build_from_crawler  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from webspider import signals  # noqa: E402
from webspider.directives.middleware import PageDirectivesMiddleware  # noqa: E402
from webspider.page.response import parsed_page  # noqa: E402
from webspider.reports.brokenlinks import BrokenLinks  # noqa: E402
from webspider.reports.skippedlog import SkippedLog  # noqa: E402
from webspider.spiders.webspider import WebSpider  # noqa: E402
from webspider.utils.url import canonical_url  # noqa: E402

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/doc/python3.11/html")
BASE = "http://127.0.0.1:8000/"


def main() -> None:
    logging.disable(logging.INFO)
    out = tempfile.mkdtemp(prefix="webspider-link-overhead-")
    settings = Settings()
    settings.setmodule("webspider.settings", priority="project")
    settings.setdict(
        {
            "WEBSPIDER_OUTPUT": out,
            "WEBSPIDER_START_URLS": BASE,
            "FEEDS": {f"{out}/pages.jsonl": {"format": "jsonlines"}},
        },
        priority="cmdline",
    )
    crawler = get_crawler(WebSpider, settings.copy_to_dict())
    crawler.stats.open_spider()
    spider = WebSpider.from_crawler(crawler)
    crawler.spider = spider
    broken = build_from_crawler(BrokenLinks, crawler)
    build_from_crawler(SkippedLog, crawler)
    directives = build_from_crawler(PageDirectivesMiddleware, crawler)
    seen: set[str] = set()
    spider.seen_urls = seen

    responses = []
    for path in sorted(ROOT.rglob("*.html")):
        url = BASE + str(path.relative_to(ROOT))
        response = HtmlResponse(
            url,
            body=path.read_bytes(),
            encoding="utf-8",
            request=Request(url, meta={"depth": 1}),
        )
        parsed_page(response, spider)  # the parse is not what is timed
        responses.append(response)
    gc.collect()

    requests = 0
    started = time.process_time()
    for response in responses:
        directives.process_spider_input(response)
        page = parsed_page(response, spider)
        assert page is not None
        crawler.signals.send_catch_log(
            signals.links_extracted, response=response, page=page
        )
        for request in spider.follow_links(response, page):
            seen.add(canonical_url(request.url))
            requests += 1
    elapsed = time.process_time() - started
    stats = crawler.stats.get_stats()
    links = stats.get("webspider/links/extracted_count")
    print(
        f"{elapsed * 1000:.0f} ms for {len(responses)} pages, {links} links: "
        f"{requests} requests, "
        f"{stats.get('webspider/skipped/url_count')} skipped, "
        f"{broken.ledger.pending_count()} pending in the ledger"
    )


if __name__ == "__main__":
    main()
