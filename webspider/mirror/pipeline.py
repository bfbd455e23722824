"""Write every fetched 2xx response into the mirror; ``item.path`` says where.

Glue between items and webspider.mirror.store.MirrorStore (which
owns the folder, the state and the link conversion). Runs last among the
pipelines, so an item an earlier pipeline dropped is never written.

Contract with other components: an item whose ``noindex`` attribute (or
key) is true — set by the page-directives middleware for ``<meta
name=robots content=noindex>`` / ``X-Robots-Tag: noindex`` — is not
written, and neither is a response whose request has
``meta[META_DONT_MIRROR]`` set. ``should_mirror`` is the one place
this is decided; override it to choose differently.

Settings: those of the mirror (docs/mirror.md); bodies larger than
``WEBSPIDER_MIRROR_THREAD_SIZE`` bytes are written in a thread so the
reactor keeps downloading meanwhile. Stats: ``webspider/mirror/*``.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from webspider.items import PageItem
from webspider.keys import META_DONT_MIRROR, NOT_MODIFIED_FLAG
from webspider.mirror.safefs import UnsafePathError
from webspider.mirror.store import MirrorStore
from webspider.page.response import response_of
from webspider.storage import failed_write, stop_crawl

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

logger = logging.getLogger(__name__)

STATS_SKIPPED = "webspider/mirror/skipped_count"  # /<reason>


class _PageItemFields:
    """ItemAdapter's reading and writing of fields, for a PageItem: its
    fields are its attributes. ItemAdapter(item) of a dataclass lists the
    class's fields each time (~10 µs, twice a page)."""

    __slots__ = ("item",)

    def __init__(self, item: PageItem) -> None:
        self.item = item

    def __contains__(self, name: str) -> bool:
        return name in _PAGE_ITEM_FIELDS

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self.item, name) if name in _PAGE_ITEM_FIELDS else default

    def __setitem__(self, name: str, value: Any) -> None:
        if name not in _PAGE_ITEM_FIELDS:
            raise KeyError(f"PageItem does not support field: {name}")
        setattr(self.item, name, value)


_PAGE_ITEM_FIELDS = frozenset(f.name for f in fields(PageItem))


def fields_of(item: Any) -> ItemAdapter | _PageItemFields:
    """Read and write ``item``'s fields, as ItemAdapter does."""
    if type(item) is PageItem:
        return _PageItemFields(item)
    return ItemAdapter(item)


class MirrorPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        store = crawler.get_extension(MirrorStore)
        if store is None:
            raise NotConfigured
        self.store = store

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def should_mirror(self, item: Any, response: Response) -> str | None:
        """Why ``item`` is not written (a stats dimension), or None to write it."""
        adapter = fields_of(item)
        noindex = adapter.get("noindex") if "noindex" in adapter else None
        if noindex or getattr(item, "noindex", False):
            return "noindex"
        if response.meta.get(META_DONT_MIRROR):
            return "dont_mirror"
        if not 200 <= response.status < 300:
            return "status"
        if "download_stopped" in response.flags:
            return "partial"
        return None

    def _skip(self, reason: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"{STATS_SKIPPED}/{reason}")

    async def process_item(self, item: Any) -> Any:
        response = response_of(item)
        if response is None:
            return item
        try:
            return await self.mirror(item, response)
        except (OSError, sqlite3.Error) as exc:
            # a write the disk refused (full, failing): not the page's fault,
            # and not recorded as done: the crawl stops, the same command
            # fetches the page again (webspider.storage)
            if not stop_crawl(self.crawler, exc):
                raise
            return item
        finally:
            self.store.forget(response)

    async def mirror(self, item: Any, response: Response) -> Any:
        reason = self.should_mirror(item, response)
        if reason is not None:
            self._skip(reason)
            return item
        adapter = fields_of(item)
        store = self.store
        if NOT_MODIFIED_FLAG in response.flags:
            entry = store.stored(response.url)
            if entry is not None:
                store.unchanged(entry)
                adapter["path"] = "/".join(entry.path)
                adapter["status"] = 304
                adapter["size"] = entry.size
                adapter["content_hash"] = entry.hash
                return item
        digest = (
            adapter.get("content_hash") or hashlib.sha256(response.body).hexdigest()
        )
        try:
            entry, change, write = store.prepare(response, digest)
        except (OSError, UnsafePathError) as exc:
            if failed_write(exc):
                raise
            store.refused(response.url, exc)
            return item
        if not write:
            store.record_change(entry.url, change, entry.path)
        else:
            try:
                targets = store.targets(response, entry)
                stored = await store.store_in_worker(response, entry, targets)
                record = None
                if stored is not None:
                    used, conversion, record = stored
                elif len(response.body) > store.thread_size:
                    # converting and writing a large body would hold the reactor
                    used, conversion = await maybe_deferred_to_future(
                        deferToThread(store.store_file, response, entry, targets)
                    )
                else:
                    used, conversion = store.store_file(response, entry, targets)
            except (OSError, UnsafePathError) as exc:
                store.abandon(entry)
                if failed_write(exc):
                    if exc.filename is None:
                        exc.filename = str(store.root.joinpath(*entry.path))
                    raise
                store.refused(response.url, exc)
                return item
            store.written(entry, used, change, conversion, record)
        for redirect in adapter.get("redirects") or ():
            store.alias(redirect, entry.url)
        adapter["path"] = "/".join(entry.path)
        return item
