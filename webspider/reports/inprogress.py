"""Tell the crawl report what each response counted, as Scrapy counts it.

A downloader middleware right above Scrapy's DownloaderStats (850): its
``process_response`` runs just before DownloaderStats counts the response
(``downloader/response_count``, ``downloader/response_status_count/<code>``),
in the same turn of the reactor, so no commit of the crawl state falls
between the two. The report (webspider.reports.crawlreport) leaves what the
requests still in progress at a commit counted out of the counters it
commits with it; the signals around the download (``response_downloaded``,
``response_received``) fire a reactor turn or more away from that count, and
a commit in between counted a response twice, or not at all, once the crawl
was killed and resumed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from webspider.reports.crawlreport import CrawlReport

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self


class InProgressCountsMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        report = crawler.get_extension(CrawlReport)
        if report is None:
            raise NotConfigured
        self.report = report

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        self.report.response_counted(request, response.status)
        return response
