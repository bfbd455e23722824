"""Pure logic behind the crawl reports: the broken-link ledger, missing
anchors, duplicate content, the summary, the progress line and report.html.

Nothing here knows the crawler; the extensions in webspider.extensions feed
these classes from Scrapy's signals and write what they produce."""
