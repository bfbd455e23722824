"""Where a URL is stored in the mirror: a safe relative path, as segments.

``url_path("http://site.test:8080/a/b?x=1", html=True)`` →
``("site.test_8080", "a", "b@x=1.html")``. Pure and total: any string a page
can make up maps to segments that are each a plain file name (never empty,
``.``, ``..``, never holding ``/``, ``\\``, NUL or control characters, at most
255 bytes), so joining them under the mirror root cannot leave it.

The encoding (documented in docs/mirror.md) is deterministic and injective:
``%`` starts an escape and is itself escaped, so an escaped name can never be
mistaken for a literal one.

- host folder: the host lower-cased, ``_<port>`` when the port is not the
  scheme's default (``_`` in a host name is escaped, so ``a_1`` and
  ``a:1`` differ);
- path segments are percent-decoded once; then every byte outside
  ``A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) + , ; =`` and printable non-ASCII text is
  written ``%XX`` (so ``%2F``, ``%5C``, NUL, control bytes, ``%``, ``@``,
  ``:``, ``*``, ``?``, space… are escaped); ``.`` and ``..`` are resolved
  as URL dot-segments, and encoded dots (``%2e%2e``) become ``%2E%2E``;
  empty segments (``a//b``) are dropped;
- a path ending in ``/`` gets ``index.html``;
- a query is kept after ``@``, escaped the same way (not decoded);
- an HTML page without an ``.html``/``.htm``/``.xhtml`` name gets ``.html``;
- Windows-reserved names (``con``, ``nul``, ``com1``…, trailing ``.``) have
  their first (or trailing) character escaped;
- a name over 255 bytes keeps a prefix, then ``%~`` and 16 hex digits of the
  SHA-256 of the whole name, then its extension.
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache
from urllib.parse import SplitResult, quote, unquote_to_bytes, urlsplit

from webspider.utils.digests import sha256

#: file names longer than this (in UTF-8 bytes) are shortened
NAME_MAX = 255
INDEX = "index.html"
QUERY_MARK = "@"
#: starts the hash suffix of shortened names and conflict suffixes; never
#: produced by escaping (``%`` followed by a non-hex character)
MARK = "%~"

_SAFE = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()+,;="
)
_HTML_EXT_RE = re.compile(r"\.x?html?$", re.IGNORECASE)
_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"com{i}" for i in range(10)]
    + [f"lpt{i}" for i in range(10)]
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: characters allowed unescaped in the hrefs that point into the mirror
_HREF_SAFE = "-._~!$*+,;=@"


def _printable(ch: str) -> bool:
    return unicodedata.category(ch)[0] not in "CZ"


#: a name of safe ASCII characters alone (``_SAFE``): kept as it is
_SAFE_NAME = re.compile(r"[A-Za-z0-9\-._~!$&'()+,;=]*")


def escape_bytes(raw: bytes, extra_safe: frozenset[int] = frozenset()) -> str:
    """File-name form of raw bytes: safe ASCII and printable UTF-8 text kept,
    everything else ``%XX``."""
    if raw.isascii():
        # most names need no escape: one match, not a loop over characters
        plain = raw.decode("ascii")
        if _SAFE_NAME.fullmatch(plain):
            return plain
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    out: list[str] = []
    if text is not None:
        for ch in text:
            code = ord(ch)
            if code < 128:
                if code in _SAFE or code in extra_safe:
                    out.append(ch)
                else:
                    out.append(f"%{code:02X}")
            elif _printable(ch):
                out.append(ch)
            else:
                out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
        return "".join(out)
    for b in raw:
        if b in _SAFE or b in extra_safe:
            out.append(chr(b))
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


def _unreserve(name: str) -> str:
    """Escape what Windows refuses: reserved device names, trailing dots."""
    stem = name.split(".", 1)[0].lower()
    if stem in _RESERVED:
        name = f"%{ord(name[0]):02X}{name[1:]}"
    if name.endswith("."):
        name = name[:-1] + "%2E"
    return name


def shorten(name: str, limit: int = NAME_MAX) -> str:
    """``name`` if it fits in ``limit`` bytes, else a prefix, a hash of the
    whole name and its (short) extension."""
    if len(name.encode("utf-8")) <= limit:
        return name
    digest = sha256(name.encode("utf-8")).hexdigest()[:16]
    stem, dot, ext = name.rpartition(".")
    suffix = f".{ext}" if dot and stem and 0 < len(ext) <= 16 and "%" not in ext else ""
    keep = limit - len(MARK) - len(digest) - len(suffix.encode("utf-8"))
    prefix_bytes = name[: len(name) - len(suffix)].encode("utf-8")[:keep]
    prefix = prefix_bytes.decode("utf-8", errors="ignore")  # whole characters
    # do not leave half an escape before the mark
    prefix = re.sub(r"%[0-9A-F]?$", "", prefix)
    return f"{prefix}{MARK}{digest}{suffix}"


ORIGINAL_SUFFIX = MARK + "orig"


def original_path(path: tuple[str, ...]) -> tuple[str, ...]:
    """Where ``keep_originals`` keeps the received bytes of a converted file."""
    return (*path[:-1], shorten(path[-1] + ORIGINAL_SUFFIX))


def _segment(raw: str) -> str:
    decoded = unquote_to_bytes(raw) if "%" in raw else raw.encode("utf-8")
    if decoded in (b".", b".."):
        return "%2E" * len(decoded)
    return escape_bytes(decoded)


def _path_segments(path: str) -> tuple[list[str], bool]:
    """Raw segments with dot-segments resolved (RFC 3986 5.2.4, clamped at
    the root), and whether the path names a folder (ends with ``/``)."""
    out: list[str] = []
    parts = path.split("/")
    is_dir = False
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == ".":
            is_dir = last
        elif part == "..":
            if out:
                out.pop()
            is_dir = last
        elif part == "":
            is_dir = last
        else:
            out.append(part)
            is_dir = False
    return out, is_dir or not out


def host_folder(url: str) -> str:
    """``host`` or ``host_port`` of an absolute URL, as a safe name."""
    parts = urlsplit(url)
    return _host_folder(parts.scheme, parts.netloc)


@lru_cache(maxsize=256)
def _host_folder(scheme: str, netloc: str) -> str:
    """``host_folder`` of a URL's scheme and authority: a crawl names a few
    hosts, and url_path names one for every URL."""
    parts = SplitResult(scheme, netloc, "", "", "")
    host = (parts.hostname or "").lower()
    name = escape_bytes(host.encode("utf-8"), frozenset()).replace("_", "%5F")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        name = f"{name}_{port}"
    if not name or name in (".", ".."):
        name = "%00" + name.replace(".", "%2E")  # no host: a name no host has
    return shorten(_unreserve(name))


#: url_path's cache: python3.11-doc's pages and files are ~1,000 distinct
#: paths. An entry (a tuple of segments) is ~430 bytes in each process;
#: 65,536 (before) was ~36 MB a process once full on a large site, 8,192
#: ~3.5 MB in the page worker on a site of random links (synth's 10,000
#: pages: bench/README.md, "Peak RSS on synth: the page worker's caches")
URL_PATH_CACHE = 1 << 11


#: an http(s) URL whose host and path ``url_path`` keeps as they are: a
#: plain host (and port), and path segments of ``_SAFE`` characters that
#: start with none of ``.`` (no dot-segment), no ``%``, query or fragment
_PLAIN_URL = re.compile(
    r"(https?)://([A-Za-z0-9.:-]+)"
    r"((?:/[A-Za-z0-9\-_~!$&'()+,;=][A-Za-z0-9\-._~!$&'()+,;=]*)*/?)"
)


@lru_cache(maxsize=URL_PATH_CACHE)
def url_path(url: str, html: bool = False) -> tuple[str, ...]:
    """The mirror path of ``url`` (best given its canonical form), as
    segments: host folder, folders, file name."""
    plain = _PLAIN_URL.fullmatch(url)
    if plain is None:
        return _url_path(url, html)
    # nearly every URL of a site: what urlsplit, the decoding and the
    # escaping would give back unchanged is taken as it is (the same
    # segments; ~3x faster: the page worker asks for every link's, the
    # export for every page's)
    scheme, netloc, path = plain.groups()
    if not path or path[-1] == "/":
        names = [*path.split("/")[1:-1], INDEX]
    else:
        names = path.split("/")[1:]
    if html and not _HTML_EXT_RE.search(names[-1]):
        names[-1] += ".html"
    out = [_unreserve(n) for n in names]  # ASCII: a character a byte
    return (
        _host_folder(scheme, netloc),
        *(n if len(n) <= NAME_MAX else shorten(n) for n in out),
    )


def _url_path(url: str, html: bool) -> tuple[str, ...]:
    """``url_path`` of any string."""
    parts = urlsplit(url)
    raw, is_dir = _path_segments(parts.path)
    names = [_segment(s) for s in raw]
    if is_dir:
        names.append(INDEX)
    query = parts.query
    if query:
        names[-1] += QUERY_MARK + escape_bytes(query.encode("utf-8"))
    if html and not _HTML_EXT_RE.search(names[-1]):
        names[-1] += ".html"
    names = [shorten(_unreserve(n)) for n in names]
    return (_host_folder(parts.scheme, parts.netloc), *names)


def conflict_name(name: str, tag: str) -> str:
    """A deterministic alternative to ``name`` when it is taken: ``tag`` is
    ``d`` for a folder that found a file in its place, ``f`` for a file that
    found a folder, or a short hash for a name another URL owns. The tag
    goes before an HTML extension so the page still opens as HTML."""
    match = _HTML_EXT_RE.search(name)
    if match and tag != "d":
        stem, ext = name[: match.start()], match.group(0)
    else:
        stem, ext = name, ""
    return shorten(f"{stem}{MARK}{tag}{ext}")


#: _href_segment's cache, for the names with a character a link escapes
#: (most of a site's are plain: left out, so that a site of random links,
#: bench/scale/synth.py's, does not fill it with all its file names)
HREF_SEGMENT_CACHE = 1 << 10

#: what ``quote(segment, safe=_HREF_SAFE)`` leaves as it is
_HREF_PLAIN = string.ascii_letters + string.digits + "_.-~" + _HREF_SAFE


def _href_segment(segment: str) -> str:
    """A mirror path's segment as a relative link writes it (urllib's quote
    was most of relative_href's cost, asked for every link converted)."""
    if not segment.strip(_HREF_PLAIN):
        return segment
    return _quoted_segment(segment)


@lru_cache(maxsize=HREF_SEGMENT_CACHE)
def _quoted_segment(segment: str) -> str:
    return quote(segment, safe=_HREF_SAFE)


def relative_href(source: tuple[str, ...], target: tuple[str, ...]) -> str:
    """The relative URL, from the file ``source`` to the file ``target``
    (both mirror paths), that a browser opening ``source`` from disk
    resolves to ``target``."""
    src_dir = source[:-1]
    common = 0
    limit = min(len(src_dir), len(target) - 1)
    while common < limit and src_dir[common] == target[common]:
        common += 1
    ups = [".."] * (len(src_dir) - common)
    rest = [_href_segment(s) for s in target[common:]]
    href = "/".join(ups + rest)
    return href
