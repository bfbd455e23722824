"""The project's spiders (``scrapy list`` shows them)."""
