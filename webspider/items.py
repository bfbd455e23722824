"""The item webspider exports for every page it fetched (one JSON line each)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)  # identity semantics: items are looked up by identity
class PageItem:
    """One successfully fetched (2xx) response. Every field is documented in
    the README ("Item fields")."""

    #: final URL of the response (after redirects)
    url: str
    #: URLs that redirected to it, in order (empty when there was no redirect)
    redirects: list[str] = field(default_factory=list)
    status: int = 200
    #: link distance from where its round started; start URLs are 0
    depth: int = 0
    #: crawl round it was fetched in (0 for the first)
    round: int = 0
    #: URL of the page the link was found on; None for start URLs
    referer: str | None = None
    #: media type without parameters, e.g. "text/html"; None when not sent
    content_type: str | None = None
    #: bytes of the body as received (after Content-Encoding is undone)
    size: int = 0
    #: sha256 hex digest of the body bytes
    content_hash: str = ""
    #: URL of the first page with the same content (see docs/reports.md), or None
    duplicate_of: str | None = None
    #: HTML <title> text, None for non-HTML or untitled pages
    title: str | None = None
    #: number of distinct links found on the page
    links: int = 0
    #: path of the mirrored file relative to the mirror root (None when not mirrored)
    path: str | None = None
    #: ISO 8601 UTC time the response was processed
    fetched_at: str = ""
    #: the page asked not to be indexed (only ever true with
    #: WEBSPIDER_EXPORT_NOINDEX; otherwise such pages are not exported)
    noindex: bool = False
