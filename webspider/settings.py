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
# depth cap and rounds (docs/depth-and-rounds.md); None: no cap / no limit
WEBSPIDER_DEPTH_ENABLED = True
WEBSPIDER_DEPTH_MAX: int | None = None
WEBSPIDER_DEPTH_MAX_ROUNDS: int | None = None
WEBSPIDER_DEPTH_DEFER = True
WEBSPIDER_DEPTH_STRICT = True
WEBSPIDER_SHUFFLE_ENABLED = False
# start over instead of continuing an interrupted crawl (webspider.frontier.resume)
WEBSPIDER_STATE_RESTART = False
# the crawl state on Redis, shared by every worker of one crawl (empty: the
# embedded SQLite state in the output folder); redis://, rediss://, unix://
WEBSPIDER_STATE = ""
# the crawl's name on Redis (empty: derived from the start URLs and scope, so
# that the same command on every worker joins the same crawl)
WEBSPIDER_STATE_KEY = ""
# seconds after which a leased request of a worker that stopped renewing it
# (killed, lost) goes back to the shared queue; also how long its robots.txt
# fetch and its places at an origin hold the others (webspider.politeness.shared)
WEBSPIDER_STATE_LEASE_TIMEOUT = 60.0
# the embedded crawl state commits (an fsync) this many seconds after the
# last commit, and also once this many pages are done (0: the time alone); a
# kill fetches again what was in flight and what was done since the last
# commit (bench/README.md, "The state's commit, per page" and "The COMMIT's
# fsync off the event loop, and 128 pages a commit")
WEBSPIDER_STATE_COMMIT_INTERVAL = 1.0
WEBSPIDER_STATE_COMMIT_PAGES = 128
# page directives (webspider.directives.middleware, docs/page-directives.md)
WEBSPIDER_DIRECTIVES_ENABLED = True
WEBSPIDER_DIRECTIVES_META = True
WEBSPIDER_DIRECTIVES_HEADER = True
WEBSPIDER_DIRECTIVES_REL = True
WEBSPIDER_EXPORT_NOINDEX = False
WEBSPIDER_PAGE_EVENTS_ENABLED = True
WEBSPIDER_LOG_SKIPPED = False
#: the skipped-URL log names at most this many hosts per reason at INFO
WEBSPIDER_LOG_SKIPPED_MAX_HOSTS = 20

# --- what one page may cost (webspider.page.options; README "Bounds and traps")
# links collected from one page at most (0: no cap): 3x the 17,261 of the
# largest page of the Python docs (genindex-all), the 50,000 URLs a sitemap
# may hold; a 60 MB page of 500,000 links held the crawl for minutes
WEBSPIDER_PAGE_MAX_LINKS = 50_000
# CPU seconds the scan of one page and the joining of its links may take (0:
# no budget); the largest page of the Python docs takes 0.1 s
WEBSPIDER_PAGE_PARSE_BUDGET = 10.0

# --- bounds and traps (webspider.bounds; README "Bounds and traps"); 0: none
WEBSPIDER_TRAPS_ENABLED = True
# a path segment (or run of segments) repeated more than this many times in a
# row is a trap (Heritrix's default): /a/ linking a/ gives /a/a/a/… until the
# URL length limit
WEBSPIDER_TRAPS_MAX_REPEATS = 2
# distinct query strings requested per path: a calendar linking next month
# never ends; a forum or shop with more pages under one path than this needs
# a larger value (the skips say so: reason query_variants)
WEBSPIDER_TRAPS_MAX_QUERIES = 1000
# requests per host (reason host_budget); off unless you choose one
WEBSPIDER_TRAPS_MAX_HOST_REQUESTS = 0
# bytes of response bodies in memory at once (downloading, being read,
# exported and mirrored) before new downloads, and the reading of responses
# that came meanwhile, wait: 4 bodies of DOWNLOAD_MAXSIZE
WEBSPIDER_BODY_MEMORY_MAX = 256 * 1024 * 1024

# --- include / exclude lists (webspider.scope.prefixmiddleware, .patterns)
WEBSPIDER_PREFIXES_ENABLED = True
WEBSPIDER_INCLUDE: list[str] = []
WEBSPIDER_EXCLUDE: list[str] = []
WEBSPIDER_PREFIXES_CASE_SENSITIVE = False
WEBSPIDER_EXCLUDE_RE: list[str] = []

# --- the address policy (webspider.addresses; README "Hostile web") ------------
# no request to loopback, private, link-local, CGNAT, multicast, reserved or
# unspecified addresses, except those the start URLs resolve to
WEBSPIDER_ADDRESSES_ENABLED = True
# networks (CIDR) allowed although special-purpose, e.g. ["10.1.0.0/16"]
WEBSPIDER_ADDRESSES_ALLOW: list[str] = []

# --- the HTTP client (webspider.download) -----------------------------------------
# "lean": webspider's asyncio client for plain http (https, proxies and
# reactors without asyncio stay on Scrapy's); "twisted": Scrapy's HTTP/1.1
# handler for everything
WEBSPIDER_HTTP_CLIENT = "lean"

# --- credentials stay with their origin (webspider.credentials) -------------
# Authorization, Proxy-Authorization and Cookie only to the start URLs' origins
WEBSPIDER_CREDENTIALS_ENABLED = True
# more origins they may go to, e.g. ["https://docs.example.org"]
WEBSPIDER_CREDENTIALS_ORIGINS: list[str] = []

# --- robots.txt, RFC 9309 (webspider.politeness.robotstxt) -----------
# parse this much of a robots.txt (RFC 9309: at least 500 KiB); the rest is ignored
WEBSPIDER_ROBOTSTXT_MAX_BYTES = 512 * 1024
WEBSPIDER_ROBOTSTXT_CACHE_TTL = 24 * 3600
WEBSPIDER_ROBOTSTXT_RETRY_TIMES = 3
WEBSPIDER_ROBOTSTXT_RETRY_DELAY = 5.0
# seconds a robots.txt download may take (never more than DOWNLOAD_TIMEOUT):
# the origin's requests wait for it, so a trickling or hanging one must not
# hold them a minute per attempt; 500 KiB in 10 s is 50 KB/s
WEBSPIDER_ROBOTSTXT_DOWNLOAD_TIMEOUT = 10.0
WEBSPIDER_ROBOTSTXT_SITEMAPS = False
# requests waiting for a robots.txt, a Crawl-delay turn or a Retry-After pause that
# hold no place in CONCURRENT_REQUESTS (webspider.politeness.waiting)
WEBSPIDER_MAX_WAITING_REQUESTS = 1000

# --- Crawl-delay and Retry-After (webspider.politeness.middleware) ----
WEBSPIDER_POLITENESS_ENABLED = True
WEBSPIDER_POLITENESS_CRAWL_DELAY_MAX = 60.0
WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX = "cap"
WEBSPIDER_POLITENESS_RETRY_AFTER_MAX = 600.0
WEBSPIDER_POLITENESS_RETRY_TIMES = 5

# reports (docs/reports.md)
WEBSPIDER_BROKEN_LINKS_ENABLED = True
WEBSPIDER_BROKEN_LINKS_MAX_REFERRERS = 1000
WEBSPIDER_CHECK_EXTERNAL = False
WEBSPIDER_CHECK_ANCHORS = False
WEBSPIDER_FAIL_ON_BROKEN = False
WEBSPIDER_DUPLICATES_ENABLED = True
WEBSPIDER_DUPLICATES_NORMALIZE = False
WEBSPIDER_DUPLICATES_IGNORE_RE: list[str] = []
WEBSPIDER_PROGRESS = "auto"
WEBSPIDER_PROGRESS_REFRESH = 2.0
WEBSPIDER_PROGRESS_INTERVAL = 60.0
WEBSPIDER_REPORT_ENABLED = True
WEBSPIDER_REPORT_INTERVAL = 60.0
WEBSPIDER_REPORT_LARGEST = 20

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
# a second process reads pages and writes the mirror's HTML and CSS files
# (webspider.pageworker.client); off: this process does it all
WEBSPIDER_PAGE_WORKER = True
# seconds an answer of the page worker may take before it is given up
WEBSPIDER_PAGE_WORKER_TIMEOUT = 120.0

# --- identity and politeness -------------------------------------------------
# The product token ("webspider") is what robots.txt groups are matched on.
USER_AGENT = f"webspider/{__version__} (+{PROJECT_URL})"
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0
# Scrapy starts this many asyncio tasks for the output of every callback and
# errback, however little it holds (an errback for a skipped link holds
# nothing): at the default, 100, starting them was a large share of a crawl's
# CPU, and at 8 they were still the most of the event loop's work that a page
# of webspider adds to Scrapy's. A page yields one item and its links: two
# tasks take them side by side (the item may wait for the page worker while
# the other hands the links to the scheduler). A worker on a shared (Redis)
# state takes 8 (webspider.frontier.options.SHARED_CONCURRENT_ITEMS).
CONCURRENT_ITEMS = 2
# Scrapy's MemoryStatsCollector without Scrapy 2.19's per-call deprecation
# wrapper (2 µs a count, several counts a request): webspider.stats
STATS_CLASS = "webspider.stats.StatsCollector"
DOWNLOAD_TIMEOUT = 60
DOWNLOAD_MAXSIZE = 64 * 1024 * 1024
DOWNLOAD_WARNSIZE = 16 * 1024 * 1024
RETRY_TIMES = 2
# Scrapy's list, without DownloadTimeoutError: a server that sent nothing
# for DOWNLOAD_TIMEOUT (60 s) seldom answers the next minute, and each retry
# cost another minute (a hanging page held its place 3 minutes); refused
# connections, DNS errors and cut-off answers are retried as before.
RETRY_EXCEPTIONS = [
    "scrapy.exceptions.CannotResolveHostError",
    "scrapy.exceptions.DownloadConnectionRefusedError",
    "scrapy.exceptions.DownloadFailedError",
    "scrapy.exceptions.ResponseDataLossError",
    "twisted.internet.error.ConnectionDone",
    "twisted.internet.error.ConnectError",
    "twisted.internet.error.ConnectionLost",
    "builtins.OSError",
    "scrapy.core.downloader.handlers.http11.TunnelError",
]
# Scrapy's value, pinned: longer URLs are skipped with reason url_length by
# webspider.bounds.trapmiddleware (Scrapy's UrlLengthMiddleware, which drops
# them with no record, is off)
URLLENGTH_LIMIT = 2083
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
# Scrapy 2.19's remote control: an HTTP server on localhost that runs the
# Python code sent to it, and a job file in the user's state folder (outside
# the output). A crawl of strangers' sites opens no such door by default.
REMOTE_CONTROL_ENABLED = False
# A page's full URL goes to its own origin only; other origins get the
# origin (as browsers do by default), and never credentials.
REFERRER_POLICY = "strict-origin-when-cross-origin"
# Meta refresh is a link (found by the spider), not a redirect.
METAREFRESH_ENABLED = False

# --- only http and https are ever requested ----------------------------------
# Each request to the HTTP client chosen (webspider.download; README
# "Settings"), with the address policy on every connection.
DOWNLOAD_HANDLERS = {
    "http": "webspider.download.handler.HTTPClientHandler",
    "https": "webspider.download.handler.HTTPClientHandler",
    "file": None,
    "data": None,
    "s3": None,
    "ftp": None,
}

# --- breadth-first: shallow pages first, level by level, in rounds -------------
# The queue (in the crawl state, as data) is ordered by depth within each
# origin (so DEPTH_PRIORITY is not needed); the scheduler holds each origin's
# level until the one before is done and starts later rounds from the
# deferred frontier.
SCHEDULER = "webspider.frontier.scheduler.StateScheduler"
# Scrapy's own lets a burst of requests exceed CONCURRENT_REQUESTS_PER_DOMAIN
DOWNLOADER = "webspider.politeness.downloader.Downloader"
DUPEFILTER_CLASS = "webspider.frontier.dupefilter.URLDupeFilter"

# --- the crawl flow: downloader middlewares decide what goes out --------------
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "webspider.scope.middleware.ScopeMiddleware": 50,
    # overlong URLs and traps, after scope, the lists and robots.txt
    "webspider.bounds.trapmiddleware.TrapMiddleware": 110,
    # Scrapy's decompression, where bodies grow, within a bound on the sum of
    # bodies held in memory
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "webspider.bounds.memory.BodyMemoryMiddleware": 590,
    # sees a 304 before redirects and decompression (600, 590) do; the stored
    # page it answers with is already decoded
    "webspider.mirror.update.MirrorUpdateMiddleware": 650,
    # Before scope: lets the robots.txt of checked hosts out, and sees the
    # final answer to a HEAD check (after redirects and retries).
    "webspider.reports.linkcheck.LinkCheckMiddleware": 45,
    # tells the report what each response counts, right before Scrapy's
    # DownloaderStats (850) counts it (a resumed crawl counts it once)
    "webspider.reports.inprogress.InProgressCountsMiddleware": 851,
    "webspider.scope.prefixmiddleware.PrefixMiddleware": 60,
    "webspider.scope.patternmiddleware.ExcludePatternMiddleware": 70,
    # before robots.txt: a refused host's robots.txt is not fetched either
    "webspider.addresses.middleware.AddressMiddleware": 80,
    # RFC 9309 robots.txt instead of Scrapy's (which allows all on 5xx/errors)
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "webspider.politeness.robotstxt.RobotsTxtMiddleware": 100,
    # process_response before RetryMiddleware (550) sees 429/503
    "webspider.politeness.middleware.PolitenessMiddleware": 560,
    # sees a timeout before RetryMiddleware (550) and the reports (45): one
    # cut by a stop of the crawl's process (Ctrl-Z) is fetched again
    "webspider.frontier.stopped.StoppedTimeoutMiddleware": 555,
    # just before the download, after everything that adds credentials
    # (HttpAuth 300, DefaultHeaders 400, cookies 700, proxies 750)
    "webspider.credentials.middleware.CredentialsMiddleware": 760,
    # the last to see a response: sends the final page to the page worker
    "webspider.pageworker.readahead.ReadAheadMiddleware": 10,
}
# … spider middlewares decide what survives from each page.
SPIDER_MIDDLEWARES: dict[str, int | None] = {
    # Scrapy's marks the start requests (is_start_request) and passes every
    # page's output through two generators that change nothing: ours marks
    # them alone (webspider.spidermw)
    "scrapy.spidermiddlewares.start.StartSpiderMiddleware": None,
    "webspider.spidermw.StartRequestsMiddleware": 25,
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    # drops overlong links with no record: webspider.bounds.trapmiddleware
    # skips them (reason url_length), redirect targets too
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    # Scrapy 2.19's check that a spider did not copy response.meta into a
    # new request: webspider's requests are built with fresh meta
    # (webspider.requests), and it is one more async generator every
    # page's output passes through
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
    # Scrapy's, with a page's Referer worked out once per origin it links to
    "scrapy.spidermiddlewares.referer.RefererMiddleware": None,
    "webspider.credentials.referer.RefererMiddleware": 700,
    # Spider output passes these from the highest number to the lowest.
    # Shuffle before anyone sees a page's links (so deferral order is random too).
    "webspider.frontier.shuffle.ShuffleMiddleware": 950,
    # reads the page first (right after HttpErrorMiddleware, 50)
    "webspider.directives.middleware.PageDirectivesMiddleware": 100,
    # depth after every filter (a link dropped for good must not be deferred)
    "webspider.frontier.depth.DepthMiddleware": 80,
    # sees the output last (after depth etc.): links_queued lists what is
    # really handed to the scheduler
    "webspider.directives.pageevents.PageEventsMiddleware": 40,
}
# The mirror runs last: an item dropped earlier (or marked noindex) is not written.
ITEM_PIPELINES: dict[str, int] = {
    "webspider.mirror.pipeline.MirrorPipeline": 900,
}
EXTENSIONS = {
    "webspider.pageworker.client.PageWorker": 90,
    "webspider.mirror.store.MirrorStore": 100,
    "webspider.mirror.skipbodies.SkipBodies": 100,
    "webspider.reports.skippedlog.SkippedLog": 500,
    "webspider.frontier.rounds.RoundControl": 510,
    "webspider.reports.brokenlinks.BrokenLinks": 520,
    "webspider.reports.duplicates.DuplicateContent": 530,
    "webspider.reports.crawlreport.CrawlReport": 540,
    # The progress line replaces LogStats (same figures and more, once).
    "scrapy.extensions.logstats.LogStats": None,
    "webspider.reports.progressline.ProgressLine": 550,
    "webspider.politeness.sitemaps.SitemapSeeder": 515,
}

# --- output --------------------------------------------------------------------
FEED_EXPORT_ENCODING = "utf-8"

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
LOG_LEVEL = "INFO"
# "Crawled" and "Scraped from" (DEBUG) cost nothing unless LOG_LEVEL prints them.
LOG_FORMATTER = "webspider.logformatter.LogFormatter"
LOG_FORMAT = "%(asctime)s [%(name)s] %(levelname)s: %(message)s"
