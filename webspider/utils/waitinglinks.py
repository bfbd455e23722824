"""The links that wait for their target, one row a link for every feature.

Two features keep a row for a link while its target is not settled: the
mirror (a page's relative link kept as written, until the target's file is
written where the link expects it: webspider.mirror.awaited) and the reports
(the link's referrer and text, until the target's outcome is known:
webspider.reports.links). Both key it ``<target code>\\n<page code>`` (the
crawl's shared URL codes, webspider.utils.urlcodes), so they share the row:
one namespace of flagged records (webspider.records), a bit for each
feature, the text for the reports. A row and its key are written once for
both (a row costs ~11 bytes of overhead in SQLite, more in Redis) and each
feature clears its own bit, in one atomic operation of the backend, when
its answer comes; the row goes with the last bit.

- ``links.waiting``: ``<target code>\\n<page code>`` → ``chr(48 + flags)``
  then the reports' text of the link (webspider.reports.links), empty when
  only the mirror waits.

How a store keeps the rows is its own: the embedded state (format 6)
packs a target's links in chunks of a table of their own, a text that
repeats kept once (format 10;
webspider.frontier.sqlitewaiting.SQLiteWaiting: ~8 bytes a link on the
synthetic site, where a row a link of its ``record`` table took ~29);
Redis keeps a field a link; the features see the records interface alone.

Pure: standard library only.
"""

from __future__ import annotations

NS_WAITING = "links.waiting"

#: the mirror keeps the link as written (webspider.mirror.awaited)
MIRROR = 1
#: the reports keep the link's referrer and text (webspider.reports.links)
REPORTS = 2
