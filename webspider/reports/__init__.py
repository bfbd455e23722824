"""What the crawl found, reported: broken links and link checks, duplicate
content, the skipped log, the progress line, summary.json and report.html.

The pure modules (ledgers, fingerprints, rendering) know nothing of the
crawler; the components beside them feed them from Scrapy's signals."""
