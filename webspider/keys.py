"""The crawl's vocabulary: the ``request.meta`` keys, stats keys and output
file names that more than one feature speaks.

A feature keeps its own stats keys beside its code; the names here are the
ones another feature reads (the progress line reads the spider's page count,
the report the frontier's deferred count…), so that no feature imports
another's constants. Every name is documented in the README.
"""

# -- request.meta keys ---------------------------------------------------------
#: the round a request belongs to (0: the first)
META_ROUND = "webspider_round"
#: the page a link was found on
META_REFERER = "webspider_referer"
#: how the link was found: "page" (followed) or "requisite" (img, css, script…)
META_LINK_KIND = "webspider_link_kind"
#: a link check (check_external): never followed, exported or mirrored
META_CHECK_ONLY = "webspider_check_only"
#: a link check whose redirect left the crawl's scope
META_REDIRECTED_OUT = "webspider_redirected_out"
#: a robots.txt request of webspider's own
META_ROBOTSTXT = "webspider_robotstxt"
#: a sitemap request, with its nesting level
META_SITEMAP = "webspider_sitemap"
#: never write this response into the mirror
META_DONT_MIRROR = "webspider_dont_mirror"
#: download this body even when nothing reads it (mirror=0)
META_KEEP_BODY = "webspider_keep_body"
#: the mirror's conditional request (If-None-Match / If-Modified-Since)
META_CONDITIONAL = "webspider_conditional"
#: how many times Retry-After was honoured for this request
META_RETRY_AFTER_TIMES = "webspider_retry_after_times"
#: response flag: a 304 answered with the page already in the mirror
NOT_MODIFIED_FLAG = "webspider_not_modified"

# -- stats keys read by more than one feature ------------------------------------
STATS_PAGES = "webspider/pages/fetched_count"
STATS_LINKS_EXTRACTED = "webspider/links/extracted_count"
STATS_BROKEN = "webspider/broken/url_count"
STATS_BROKEN_INTERNAL = "webspider/broken/url_count/internal"
STATS_DUPLICATES = "webspider/duplicates/page_count"
STATS_ROUNDS = "webspider/depth/round_completed_count"
STATS_DEFERRED_LEFT = "webspider/depth/deferred_left_count"
#: 1 when this crawl continues an interrupted one (its crawl state)
STATS_STATE_RESUMED = "webspider/state/resumed"
#: URLs (GET keys) queued by the scheduler, this run
STATS_URLS_SEEN = "webspider/scheduler/url_count"
#: pages whose links were cut at WEBSPIDER_PAGE_MAX_LINKS, or whose reading
#: ran out of WEBSPIDER_PAGE_PARSE_BUDGET
STATS_PAGES_LINKS_CAPPED = "webspider/pages/links_capped_count"
STATS_PAGES_PARSE_BUDGET = "webspider/pages/parse_budget_count"
#: downloads and responses that waited for bodies in memory to be released
#: (WEBSPIDER_BODY_MEMORY_MAX), and the most bytes of bodies seen held
STATS_BODY_MEMORY_WAITED = "webspider/body_memory/waited_count"
STATS_BODY_MEMORY_MAX = "webspider/body_memory/max_bytes"

# -- output files (in the output folder) -------------------------------------------
PAGES_FILE = "pages.jsonl"
BROKEN_LINKS_FILE = "broken-links.jsonl"
SKIPPED_FILE = "skipped.jsonl"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.html"
DEFERRED_FILE = "deferred.jsonl"
CHANGES_FILE = "changes.jsonl"
MIRROR_STATE_FILE = "mirror-state.jsonl"
# -- state files (in JOBDIR) -----------------------------------------------------------
SEEN_FILE = "webspider-seen.txt"
FRONTIER_FILE = "webspider-frontier.sqlite3"
STATE_FILE = "webspider-state.sqlite3"
# -- state file (in the output folder, without JOBDIR) -------------------------------
OUTPUT_STATE_FILE = ".webspider-state.sqlite3"
