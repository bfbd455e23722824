"""Where each link of a mirrored page should lead: the mirror's link policy.

Three passes over a page's links (all through webspider.mirror.rewrite, so
only link values change):

- ``convert`` when a page or stylesheet is written: a link to a mirrored
  file becomes a relative path (left as written when it already opens that
  file); a link within the page's own site to something not mirrored yet
  leads where its file is expected (kept as written when it already does),
  and is remembered; any other link becomes absolute;
- ``fix_up`` later (end of crawl, start of a resumed one), for pages whose
  links depended on files mirrored after them;
- ``unconvert`` for a page the update crawl kept (304): converted links back
  into the absolute URLs they stand for, so the spider follows the same
  links as from the original.

Pure: reads the mirror's state (a MirrorState, or a TargetIndex snapshot of
it), imports nothing from Scrapy.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from sys import intern
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

from webspider.mirror.paths import relative_href, url_path
from webspider.mirror.rewrite import rewrite_css, rewrite_html, rewrite_spans
from webspider.page.encoding import ascii_compatible
from webspider.utils.url import canonical_url, is_fetchable, url_scheme
from webspider.utils.urljoin import UrlJoiner

if TYPE_CHECKING:
    from array import array

    from webspider.mirror.entry import Entry
    from webspider.mirror.rewrite import Resolve
    from webspider.page.links import ParsedPage
    from webspider.page.spans import Span

Segments = tuple[str, ...]


class _Stored(Protocol):
    @property
    def path(self) -> Segments: ...


class _Aliases(Protocol):
    def get(self, url: str, /) -> str | None: ...

    def __contains__(self, url: object, /) -> bool: ...


class Targets(Protocol):
    """What conversion reads of the mirror's state (MirrorState, or a
    TargetIndex snapshot of it for one page): where each URL is stored, the
    redirects, and URLs fetched that will not be mirrored."""

    @property
    def aliases(self) -> _Aliases: ...

    @property
    def absent(self) -> Container[str]: ...

    def get(self, url: str) -> _Stored | None: ...


class Lookup(Protocol):
    """What ``unconvert`` reads of a MirrorState without a restore map."""

    def entry(self, url: str) -> Entry | None: ...

    def owner_of(self, key: str) -> str | None: ...


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
    #: where the links of ``pending`` and ``kept`` are in ``data``: the
    #: fix-up of this page can rewrite them without scanning it again
    spans: list[Span] = field(default_factory=list)
    #: (CRC-32 of ``data``, pack_spans(spans)) when converted elsewhere (the
    #: page worker: neither ``data`` nor ``spans`` are here then)
    packed_spans: tuple[int, array[int]] | None = None
    #: ``restore`` as the index record keeps it (webspider.mirror.state's
    #: ``pack_restore`` with the page's canonical URL), when worked out
    #: elsewhere (the page worker)
    packed_restore: dict[str, Any] | None = None
    #: the keys of ``kept`` (when a conversion, not a fix-up, made it) that
    #: are of the page's site and expect the file ``url_path`` gives:
    #: kept by the URL they wait for (webspider.mirror.awaited), the others
    #: with the page. The page worker sends only the others in ``kept``.
    plain: list[str] | None = None


def is_relative(value: str) -> bool:
    return not url_scheme(value) and not value.startswith(("//", "\\\\"))


def already_points(value: str, source: Segments, target: Segments) -> bool:
    """Whether the relative reference ``value``, read from the file
    ``source``, already opens the file ``target``.

    ``posixpath.normpath(posixpath.join(folder, unquote(path))) == target``
    (``folder``: ``source``'s), worked out on the segments: the mirror's
    segments are plain names (no ``/``, ``.``, ``..`` or empty one:
    SafeTree's check_segments), so the join is the folder's segments and
    the path's, and normpath's work on a relative path is dropping empty and
    ``.`` segments and taking one back for each ``..``. A path that becomes
    absolute (a leading ``/``) or climbs above the mirror's root (normpath
    keeps the ``..``) opens no mirrored file. Called for nearly every link
    of every page converted; posixpath's pure-Python normpath was most of
    its cost (tests/test_mirror_links.py compares the two)."""
    if url_scheme(value) or value.startswith("//") or "?" in value:
        return False
    path = value.partition("#")[0]
    if not path or path.endswith("/") or "\\" in path:
        return False
    if "%" in path:
        path = unquote(path)
    if path.startswith("/"):
        return False  # absolute: a mirror path never is
    parts = list(source[:-1])
    for part in path.split("/"):
        if part == "..":
            if not parts:
                return False  # above the root: normpath keeps the "..", no file
            parts.pop()
        elif part and part != ".":
            parts.append(part)
    return "/".join(parts) == "/".join(target)


def _rewrite(
    body: bytes,
    resolve: Resolve,
    encoding: str | None,
    html: bool,
    *,
    track: set[str] | None = None,
    tracked: list[Span] | None = None,
) -> tuple[bytes, int]:
    # no memo here: the rewriter already asks once per distinct value on a
    # page; ``track`` is filled by ``resolve`` as it goes
    rewrite = rewrite_html if html else rewrite_css
    return rewrite(
        body, resolve, encoding, track=() if track is None else track, tracked=tracked
    )


#: What a link without its fragment becomes: (the new value, or None to
#: keep it; whether the fix-up must look at it again; the absolute URL a new
#: relative value stands for, to undo it, or None).
Decision = tuple["str | None", bool, "str | None"]
_KEEP: Decision = (None, False, None)
_AGAIN: Decision = (None, True, None)


def _by_address(
    decide: Callable[[str, str], Decision],
    track: set[str],
    restore: dict[str, str],
    base: str | None,
) -> Resolve:
    """The ``resolve`` of one page's links (see webspider.mirror.rewrite),
    deciding once per link without its fragment with ``decide(head, value)``:
    a page links the same file at many fragments. ``<base href>`` becomes
    ``base`` (None: kept)."""
    decisions: dict[str, Decision] = {}

    def resolve(value: str, kind: str) -> str | None:
        if kind == "base":
            return base
        if value.startswith("#"):
            return None
        head, _, fragment = value.partition("#")
        decision = decisions.get(head)
        if decision is None:
            decision = decisions[head] = decide(head, value)
        new, again, stands_for = decision
        if again:
            track.add(value)
        if new is None:
            return None
        if fragment:
            new += "#" + fragment
            if stands_for is not None:
                stands_for += "#" + fragment
        if stands_for is not None:
            # kept with the page's entry until the crawl ends, for every
            # page: one string per distinct value, not one per page
            restore[intern(new)] = intern(stands_for)
        return new

    return resolve


def convert(
    body: bytes,
    state: Targets,
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
    plain: dict[str, None] = {}
    restore: dict[str, str] = {}
    track: set[str] = set()
    relative_ok = base_url == page_url
    # made when a link is not among the scan's (``resolved``): never, for
    # most pages the crawl read (its setup is an urljoin)
    joiner: UrlJoiner | None = None
    resolved = page.resolved if page is not None else {}
    base_href = relative_href(source, source)
    page_key = canonical_url(page_url)
    site = page_key[: page_key.find("/", page_key.find("//") + 2) + 1]
    absent = state.absent

    def keep(key: str, address: str, expected: Segments) -> None:
        kept[key] = path = "/".join(expected)
        # the usual case (a canonical link of the page's site) costs no
        # second url_path
        if (
            key.startswith(site)
            and "\n" not in key
            and (key == address or "/".join(url_path(key)) == path)
        ):
            plain[key] = None
        else:  # the last link to ``key`` says what it expects, as in ``kept``
            plain.pop(key, None)

    def decide(head: str, value: str) -> Decision:
        nonlocal joiner
        absolute = resolved.get(value, "")
        if absolute == "":
            if joiner is None:
                joiner = UrlJoiner(base_url)
            try:
                absolute = joiner.join(head)
            except ValueError:
                return _KEEP
            if not is_fetchable(absolute):
                return _KEEP
        elif absolute is None:
            return _KEEP
        address = absolute.partition("#")[0]
        key = canonical_url(address)
        target = state.get(key)
        if target is None:
            if key in absent:
                # fetched, and never mirrored in this run (a 404): absolute
                # now, as the fix-up would write it
                pending.add(key)
                return (address if address != head else None), True, None
            # Not mirrored (yet). A relative link that will open the file if
            # it is mirrored under its expected name is kept as the page
            # wrote it; the fix-up checks it.
            if relative_ok and is_relative(head):
                expected = url_path(address)
                if already_points(head, source, expected):
                    keep(key, address, expected)
                    return _AGAIN
            if key.startswith(site) and key not in state.aliases:
                # The page's own site: its file will most likely be mirrored
                # under the expected name, so the link leads there now; the
                # fix-up checks (and makes it absolute if it is not).
                expected = url_path(address)
                keep(key, address, expected)
                return relative_href(source, expected), True, address
            pending.add(state.aliases.get(key) or key)
            return (address if address != head else None), True, None
        if already_points(head, source, target.path):
            return _KEEP  # keep the page's own bytes where they already work
        return relative_href(source, target.path), False, address

    resolve = _by_address(decide, track, restore, base_href)
    tracked: list[Span] = []
    if page is not None and page.spans is not None:
        data, count = rewrite_spans(
            body, page.spans, resolve, encoding, track=track, tracked=tracked
        )
    else:
        data, count = _rewrite(
            body, resolve, encoding, html, track=track, tracked=tracked
        )
    return Conversion(data, count, pending, kept, restore, tracked, plain=list(plain))


def needs_fix_up(entry: Entry, state: Targets) -> bool:
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
    body: bytes,
    entry: Entry,
    state: Targets,
    *,
    encoding: str | None,
    html: bool,
    spans: list[Span] | None = None,
) -> Conversion:
    """A stored (converted) page with the links that depended on later files
    fixed: absolute links to files mirrored since become relative; kept
    relative links whose file turned up elsewhere point to it, and those
    whose file did not turn up become absolute. ``spans``, when known
    (Conversion.spans of the bytes ``body`` is), spare scanning the page."""
    source = entry.path
    pending: set[str] = set()
    kept: dict[str, str] = {}
    restore: dict[str, str] = {}
    track: set[str] = set()
    join = UrlJoiner(entry.url).join
    # A fix-up interrupted after it wrote this file but before its record
    # was committed left links already pointing where their files are now:
    # the same value again, and what it stands for (for ``restore``).
    landed: dict[str, str] = {}
    for key in (*entry.pending, *entry.kept):
        target = state.get(key)
        if target is not None and "/".join(target.path) != entry.kept.get(key):
            landed.setdefault(relative_href(source, target.path), key)

    def decide(head: str, value: str) -> Decision:
        relative = is_relative(head)
        if relative and not entry.kept and not landed:
            return _KEEP  # as below, without joining: most pages keep none
        stands_for = entry.restore.get(value)  # a link the conversion wrote
        if stands_for is not None:
            absolute = stands_for.partition("#")[0]
        elif relative and head in landed:
            absolute = landed[head]
        else:
            absolute = join(head) if relative else head
        if not is_fetchable(absolute):
            return _KEEP
        key = canonical_url(absolute)
        if relative and key not in entry.kept and head not in landed:
            return _KEEP  # a link converted when the page was written
        target = state.get(key)
        if target is None:
            pending.add(key)
            return (absolute if relative else None), True, None
        if relative and "/".join(target.path) == entry.kept.get(key):
            kept[key] = entry.kept[key]
            return _AGAIN
        return relative_href(source, target.path), False, absolute

    resolve = _by_address(decide, track, restore, None)
    tracked: list[Span] = []
    if spans is not None and ascii_compatible(encoding):
        data, count = rewrite_spans(
            body, spans, resolve, encoding, track=track, tracked=tracked
        )
    else:
        data, count = _rewrite(
            body, resolve, encoding, html, track=track, tracked=tracked
        )
    return Conversion(data, count, pending, kept, restore, tracked)


def unconvert(
    body: bytes,
    entry: Entry,
    state: Lookup,
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
    if restore or entry.restore_joins:
        # the values conversion wrote, and what they stood for: exact, and a
        # dictionary lookup per link (those left out of it say their URL as
        # they are, the page's base being its URL again)
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
        literal = state.entry(canonical_url(join(path)))
        if literal is not None and "/".join(literal.path) == joined:
            target: Entry | None = literal
        else:
            owner = state.owner_of(joined.casefold())
            target = state.entry(owner) if owner else None
        if target is None:
            return None
        return target.url + (f"#{fragment}" if fragment else "")

    data, _ = _rewrite(body, resolve, encoding, html)
    return data
