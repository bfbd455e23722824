from __future__ import annotations

from scrapy.core.engine import ExecutionEngine, _Slot
from scrapy.utils.test import get_crawler

from webspider.spiders.webspider import WebSpider


def test_engine_still_keeps_requests_in_progress_where_the_barrier_reads_them():
    # StateScheduler reads engine._slot.inprogress (no public equivalent);
    # this fails loudly if a Scrapy upgrade moves it.
    crawler = get_crawler(WebSpider)
    engine = ExecutionEngine(crawler, lambda _: None)
    try:
        assert engine._slot is None
        assert "inprogress" in _Slot.__init__.__code__.co_names
    finally:
        engine.downloader.close()
