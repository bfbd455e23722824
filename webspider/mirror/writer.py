"""The other writer of the mirror's pages: the protocol a process that
read a page implements to write it itself (the page worker,
webspider.pageworker, attaches itself to webspider.mirror.store.MirrorStore
as one), so the page's bytes need not cross again.

Apart from the store because it is the contract between two packages: the
store asks, the page worker answers; neither reads the other's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from webspider.mirror.links import Conversion
from webspider.mirror.safefs import Segments

if TYPE_CHECKING:
    from scrapy.http import Response

    from webspider.mirror.entry import Entry
    from webspider.mirror.targets import TargetIndex

#: a page stored by a PageWriter: the path written, the conversion, and
#: the page's index record when the writer made it
Stored = tuple[Segments, "Conversion | None", "list[Any] | None"]


class PageWriter(Protocol):
    """Another writer of the mirror's pages: one that read a page may hold
    it and write it itself, so its bytes need not cross again (the page
    worker, webspider.pageworker, attaches itself as one). It converts links
    with the snapshot of the mirror's state each store hands it, so it keeps
    nothing per page."""

    def start_mirror(self, root: str, forbidden: list[Segments]) -> bool:
        """Write the mirror at ``root`` from now on; whether it will."""

    def holds(self, response: Response) -> bool:
        """Whether it holds ``response``'s page, and can store it."""

    def url_path(self, response: Response) -> Segments | None:
        """``url_path`` of ``response``'s URL (an HTML page's or a
        stylesheet's) if it worked it out already, else None."""

    def plain_path(self, response: Response) -> str | None:
        """``"/".join(url_path(canonical_url(response.url)))`` (the path a
        ``where_value`` of 1 stands for) if it worked it out already,
        else None."""

    def planned_path(self, response: Response) -> Segments | None:
        """``SafeTree.plan`` of ``url_path(response)`` in its own tree of
        the mirror, if it planned it already, else None."""

    def forget_plans(self) -> None:
        """A write of the crawl's found the tree changed: plan anew."""

    async def store(
        self,
        response: Response,
        entry: Entry,
        targets: TargetIndex | None,
    ) -> Stored | None:
        """Convert (with ``targets``, when given) and write the page it holds
        for ``response`` at ``entry.path``: the path written, the
        conversion, and the page's index record (``Entry.index_json`` of
        ``entry`` as written, or None: made here), or None (store it here).
        Raises UnsafePathError or OSError when the write was refused."""

    def forget(self, response: Response) -> None:
        """``response``'s page need not be kept any longer."""

    async def fix_files(
        self, jobs: list[dict[str, Any]], targets: dict[str, Any]
    ) -> list[dict[str, Any]] | None:
        """Fix up the files of ``jobs`` (webspider.mirror.fixup.FileFixer)
        at the end of the crawl; None: the fix-up does them itself."""

    def mirror_done(self) -> None:
        """The crawl ends and its fix-up is over: the mirror asks nothing
        more of it."""
