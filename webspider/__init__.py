"""webspider: a polite, fast web spider built on Scrapy."""

__version__ = "0.1.0"
PROJECT_URL = "https://github.com/webspider/webspider"
