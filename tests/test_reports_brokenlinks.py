"""BrokenLinks fed by hand: the stats follow what broken-links.jsonl lists."""

from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from webspider.keys import STATS_BROKEN
from webspider.page.links import Link, ParsedPage
from webspider.reports.brokenlinks import BrokenLinks
from webspider.spiders.webspider import WebSpider


def test_a_page_linking_a_broken_redirect_hop_updates_the_count(tmp_path):
    crawler = get_crawler(WebSpider, {"WEBSPIDER_OUTPUT": str(tmp_path)})
    crawler.stats.open_spider()
    ext = build_from_crawler(BrokenLinks, crawler)
    # /a redirected to /b, which answered 404: only /a was linked so far
    request = Request("http://s.test/b", meta={"redirect_urls": ["http://s.test/a"]})
    ext.broken(request, 404, None, None)
    assert crawler.stats.get_value(STATS_BROKEN) == 1
    page = ParsedPage(
        url="http://s.test/p",
        base_url="http://s.test/p",
        title=None,
        links=[Link(url="http://s.test/b", kind="page", tag="a", text="B")],
    )
    ext.links_extracted(HtmlResponse("http://s.test/p", body=b""), page)
    assert crawler.stats.get_value(STATS_BROKEN) == 2
