"""Signals webspider sends, in addition to Scrapy's own.

Connect handlers with ``crawler.signals.connect(handler, signal=...)``; the
arguments each signal sends are documented in the README ("Signals")."""

#: A URL the crawl found but will not request (now). Sent with ``url``,
#: ``reason`` (one of webspider.skips.REASONS) and ``referer`` (or None).
url_skipped = object()
