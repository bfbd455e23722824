"""How a page is downloaded: Scrapy's HTTP/1.1 client (Twisted's) or the lean
asyncio client, chosen by ``WEBSPIDER_HTTP_CLIENT``."""
