"""Signals webspider sends, in addition to Scrapy's own.

Connect handlers with ``crawler.signals.connect(handler, signal=...)``; the
arguments each signal sends are documented in the README ("Signals")."""

#: A URL the crawl found but will not request (now). Sent with ``url``,
#: ``reason`` (one of webspider.skips.REASONS) and ``referer`` (or None).
url_skipped = object()

#: The spider is about to follow the links of a page (not sent for duplicate
#: pages nor link checks). Sent with ``response`` and ``page`` (its
#: webspider.utils.html.ParsedPage); handlers must be cheap, they run once
#: per page.
links_extracted = object()

#: A request of the spider failed: an HTTP error, a download error, or a
#: middleware's decision not to fetch it (IgnoreRequest). Sent by the spider's
#: errback with ``request`` and ``failure``.
request_failed = object()
