"""Scrapy settings for webspider.

Every WEBSPIDER_* setting is documented in the README ("Settings"); spider
arguments (``-a name=value``) override them (see webspider.config).
"""

from webspider import PROJECT_URL, __version__

BOT_NAME = "webspider"
SPIDER_MODULES = ["webspider.spiders"]
NEWSPIDER_MODULE = "webspider.spiders"
COMMANDS_MODULE = "webspider.commands"

# --- webspider's own settings (defaults live here and nowhere else) ---------
WEBSPIDER_START_URLS: list[str] = []
WEBSPIDER_SCOPE = "host"
WEBSPIDER_OUTPUT = "output"

# --- identity and politeness -------------------------------------------------
# The product token ("webspider") is what robots.txt groups are matched on.
USER_AGENT = f"webspider/{__version__} (+{PROJECT_URL})"
ROBOTSTXT_OBEY = True
ROBOTSTXT_PARSER = "scrapy.robotstxt.ProtegoRobotParser"
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0
DOWNLOAD_TIMEOUT = 60
DOWNLOAD_MAXSIZE = 64 * 1024 * 1024
DOWNLOAD_WARNSIZE = 16 * 1024 * 1024
RETRY_TIMES = 2
# Scrapy starts CONCURRENT_ITEMS asyncio tasks for every callback/errback
# output, even an empty one (each skipped request's errback): at the default
# 100 that was ~470,000 tasks and a third of the CPU on python3.11-doc. One
# item per page needs little pipeline parallelism (bench/README.md).
CONCURRENT_ITEMS = 8
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
# Meta refresh is a link (found by the spider), not a redirect.
METAREFRESH_ENABLED = False

# --- only http and https are ever requested ----------------------------------
DOWNLOAD_HANDLERS = {"file": None, "data": None, "s3": None, "ftp": None}

# --- breadth-first: shallow pages first ----------------------------------------
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
SCHEDULER_PRIORITY_QUEUE = "scrapy.pqueues.ScrapyPriorityQueue"
DUPEFILTER_CLASS = "webspider.scheduler.dupefilter.URLDupeFilter"

# --- the crawl flow: downloader middlewares decide what goes out --------------
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "webspider.downloadermiddlewares.scope.ScopeMiddleware": 50,
}
# … spider middlewares decide what survives from each page.
SPIDER_MIDDLEWARES: dict[str, int | None] = {}
ITEM_PIPELINES: dict[str, int] = {}
EXTENSIONS = {
    "webspider.extensions.skippedlog.SkippedLog": 500,
}

# --- output --------------------------------------------------------------------
FEED_EXPORT_ENCODING = "utf-8"

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
LOG_LEVEL = "INFO"
LOG_FORMAT = "%(asctime)s [%(name)s] %(levelname)s: %(message)s"
