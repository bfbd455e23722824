"""Where each link of a mirrored page should lead: the mirror's link policy.

Three passes over a page's links (all through webspider.utils.rewrite, so
only link values change):

- ``convert`` when a page or stylesheet is written: a link to a mirrored
  file becomes a relative path (left as written when it already opens that
  file); a link to something not mirrored becomes absolute, except a
  relative link that will work once its file is mirrored under the expected
  name, which is kept and remembered;
- ``fix_up`` later (end of crawl, start of a resumed one), for pages whose
  links depended on files mirrored after them;
- ``unconvert`` for a page the update crawl kept (304): converted links back
  into the absolute URLs they stand for, so the spider follows the same
  links as from the original.

Pure: reads a MirrorState, imports nothing from Scrapy.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from webspider.utils.mirrorpath import relative_href, url_path
from webspider.utils.rewrite import rewrite_css, rewrite_html, rewrite_spans
from webspider.utils.url import canonical_url, is_fetchable, url_scheme
from webspider.utils.urljoin import UrlJoiner

if TYPE_CHECKING:
    from webspider.utils.html import ParsedPage
    from webspider.utils.mirrorstate import Entry, MirrorState
    from webspider.utils.rewrite import Resolve

Segments = tuple[str, ...]


@dataclass
class Conversion:
    """A converted page: its bytes, how many links were rewritten, and the
    links the fix-up must look at again."""

    data: bytes
    count: int
    #: canonical URLs left absolute because they were not mirrored
    pending: set[str]
    #: canonical URL → expected path, of relative links kept as written
    kept: dict[str, str]
    #: rewritten value → the absolute URL it stands for (to undo it)
    restore: dict[str, str] = field(default_factory=dict)


def is_relative(value: str) -> bool:
    return not url_scheme(value) and not value.startswith(("//", "\\\\"))


def already_points(value: str, source: Segments, target: Segments) -> bool:
    """Whether the relative reference ``value``, read from the file
    ``source``, already opens the file ``target``."""
    if url_scheme(value) or value.startswith("//") or "?" in value:
        return False
    path = value.partition("#")[0]
    if not path or path.endswith("/") or "\\" in path:
        return False
    joined = posixpath.normpath(posixpath.join("/".join(source[:-1]), unquote(path)))
    return joined == "/".join(target)


def _rewrite(
    body: bytes, resolve: Resolve, encoding: str | None, html: bool
) -> tuple[bytes, int]:
    # no memo here: the rewriter already asks once per distinct value on a page
    if html:
        return rewrite_html(body, resolve, encoding)
    return rewrite_css(body, resolve, encoding)


def convert(
    body: bytes,
    state: MirrorState,
    source: Segments,
    *,
    page_url: str,
    base_url: str,
    encoding: str | None,
    html: bool,
    page: ParsedPage | None = None,
) -> Conversion:
    """The links of a page (``page_url``, stored at ``source``) converted
    for offline browsing. ``page``, the crawl's scan of an HTML page, spares
    scanning and joining its links again."""
    pending: set[str] = set()
    kept: dict[str, str] = {}
    restore: dict[str, str] = {}
    relative_ok = base_url == page_url
    join = UrlJoiner(base_url).join
    resolved = page.resolved if page is not None else {}

    def resolve(value: str, kind: str) -> str | None:
        if kind == "base":
            return relative_href(source, source)
        if value.startswith("#"):
            return None
        absolute = resolved.get(value, "")
        if absolute == "":
            try:
                absolute = join(value)
            except ValueError:
                return None
            if not is_fetchable(absolute):
                return None
        elif absolute is None:
            return None
        address, _, fragment = absolute.partition("#")
        key = canonical_url(address)
        target = state.get(key)
        if target is None:
            # Not mirrored (yet). A relative link that will open the file if
            # it is mirrored under its expected name is kept as the page
            # wrote it; the fix-up checks it.
            if relative_ok and is_relative(value):
                expected = url_path(address)
                if already_points(value, source, expected):
                    kept[key] = "/".join(expected)
                    return None
            pending.add(state.aliases.get(key, key))
            return absolute if absolute != value else None
        if already_points(value, source, target.path):
            return None  # keep the page's own bytes where they already work
        href = relative_href(source, target.path) + (f"#{fragment}" if fragment else "")
        restore[href] = absolute
        return href

    if page is not None and page.spans is not None:
        data, count = rewrite_spans(body, page.spans, resolve, encoding)
    else:
        data, count = _rewrite(body, resolve, encoding, html)
    return Conversion(data, count, pending, kept, restore)


def needs_fix_up(entry: Entry, state: MirrorState) -> bool:
    """Whether a stored page has links that depend on what was mirrored
    since it was written."""
    get = state.get
    if any(get(url) for url in entry.pending):
        return True
    for url, expected in entry.kept.items():
        target = get(url)
        if target is None or "/".join(target.path) != expected:
            return True
    return False


def fix_up(
    body: bytes, entry: Entry, state: MirrorState, *, encoding: str | None, html: bool
) -> Conversion:
    """A stored (converted) page with the links that depended on later files
    fixed: absolute links to files mirrored since become relative; kept
    relative links whose file turned up elsewhere point to it, and those
    whose file did not turn up become absolute."""
    source = entry.path
    pending: set[str] = set()
    kept: dict[str, str] = {}
    restore: dict[str, str] = {}
    join = UrlJoiner(entry.url).join

    def resolve(value: str, kind: str) -> str | None:
        if kind == "base" or value.startswith("#"):
            return None
        relative = is_relative(value)
        if relative and not entry.kept:
            return None  # as below, without joining: most pages keep none
        absolute = join(value) if relative else value
        if not is_fetchable(absolute):
            return None
        address, _, fragment = absolute.partition("#")
        key = canonical_url(address)
        if relative and key not in entry.kept:
            return None  # a link converted when the page was written
        target = state.get(key)
        if target is None:
            pending.add(key)
            return absolute if relative else None
        if relative and "/".join(target.path) == entry.kept[key]:
            kept[key] = entry.kept[key]
            return None
        href = relative_href(source, target.path) + (f"#{fragment}" if fragment else "")
        restore[href] = absolute
        return href

    data, count = _rewrite(body, resolve, encoding, html)
    return Conversion(data, count, pending, kept, restore)


def unconvert(
    body: bytes,
    entry: Entry,
    state: MirrorState,
    *,
    page_url: str,
    encoding: str | None,
    html: bool,
) -> bytes:
    """A stored page with its links to mirrored files turned back into the
    absolute URLs they stand for (from ``entry.restore``; a state without it
    is read by file ownership)."""
    folder = "/".join(entry.path[:-1])
    restore = entry.restore
    join = UrlJoiner(page_url).join
    if restore:
        # the values conversion wrote, and what they stood for: exact, and a
        # dictionary lookup per link
        def undo(value: str, kind: str) -> str | None:
            return page_url if kind == "base" else restore.get(value)

        data, _ = _rewrite(body, undo, encoding, html)
        return data

    def resolve(value: str, kind: str) -> str | None:
        if kind == "base":
            return page_url
        if url_scheme(value) or value.startswith(("#", "//")):
            return None
        path, _, fragment = value.partition("#")
        joined = posixpath.normpath(posixpath.join(folder, unquote(path)))
        # The URL the link names literally, when that is the file's URL (a
        # link kept as written); else whoever owns the file: two URLs with
        # the same bytes ("/" and "/index.html") share one.
        literal = state.entries.get(canonical_url(join(path)))
        if literal is not None and "/".join(literal.path) == joined:
            target: Entry | None = literal
        else:
            owner = state.owners.get(joined.casefold())
            target = state.entries.get(owner) if owner else None
        if target is None:
            return None
        return target.url + (f"#{fragment}" if fragment else "")

    data, _ = _rewrite(body, resolve, encoding, html)
    return data
