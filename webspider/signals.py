"""Signals webspider sends, in addition to Scrapy's own.

Connect handlers with ``crawler.signals.connect(handler, signal=...)``; the
arguments each signal sends are documented in the README ("Signals")."""

#: A URL the crawl found but will not request (now). Sent with ``url``,
#: ``reason`` (one of webspider.skips.REASONS) and ``referer`` (or None).
url_skipped = object()

#: robots.txt of an origin asks for a ``Crawl-delay``. Sent with ``origin``
#: (scheme, host, port) and ``delay`` (seconds, as written in robots.txt);
#: the politeness middleware spaces requests to that origin accordingly.
crawl_delay_found = object()

#: robots.txt of an origin was parsed. Sent with ``origin`` (scheme, host,
#: port) and ``parser`` (a protego.Protego); the sitemap seeder listens.
robots_rules_found = object()
