"""The mirror's stats keys (README, "## Stats"), but for the changes'
(webspider.mirror.changes): counted by the store as pages are written, by
the update middleware (a 304: webspider.mirror.update) and by the fix-up at
the crawl's end (webspider.mirror.finish)."""

from __future__ import annotations

STATS_WRITTEN = "webspider/mirror/written_count"
STATS_BYTES = "webspider/mirror/written_bytes_count"
STATS_NOT_MODIFIED = "webspider/mirror/not_modified_count"
STATS_CONVERTED = "webspider/mirror/converted_links_count"
STATS_FIXED = "webspider/mirror/fixed_up_count"
STATS_REFUSED = "webspider/mirror/refused_count"
