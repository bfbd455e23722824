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

# mirror (docs/mirror.md): "" = <output>/mirror, "0" = off, else a folder
WEBSPIDER_MIRROR = ""
WEBSPIDER_MIRROR_CONVERT_LINKS = True
WEBSPIDER_MIRROR_KEEP_ORIGINALS = False
# conditional requests (If-None-Match / If-Modified-Since) into an existing mirror
WEBSPIDER_MIRROR_UPDATE = True
# bodies larger than this (bytes) are written in a thread, off the reactor
WEBSPIDER_MIRROR_THREAD_SIZE = 256 * 1024
# with mirror=0, stop downloading bodies nothing reads (not HTML, not CSS)
WEBSPIDER_SKIP_BODIES_ENABLED = True

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
    # sees a 304 before redirects and decompression (600, 590) do; the stored
    # page it answers with is already decoded
    "webspider.downloadermiddlewares.mirrorupdate.MirrorUpdateMiddleware": 650,
}
# … spider middlewares decide what survives from each page.
SPIDER_MIDDLEWARES: dict[str, int | None] = {}
# The mirror runs last: an item dropped earlier (or marked noindex) is not written.
ITEM_PIPELINES: dict[str, int] = {
    "webspider.pipelines.mirror.MirrorPipeline": 900,
}
EXTENSIONS = {
    "webspider.extensions.skippedlog.SkippedLog": 500,
    "webspider.extensions.mirrorstore.MirrorStore": 100,
    "webspider.extensions.skipbodies.SkipBodies": 100,
}

# --- output --------------------------------------------------------------------
FEED_EXPORT_ENCODING = "utf-8"

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
LOG_LEVEL = "INFO"
LOG_FORMAT = "%(asctime)s [%(name)s] %(levelname)s: %(message)s"
