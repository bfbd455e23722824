"""Read a sitemap file as far as it can be read, and say what was wrong.

A sitemap is written by a stranger: it may be a gzip bomb, damaged gzip,
XML that is not well-formed, or list URLs that are not URLs. None of that
may cost the crawl more than ``max_size`` bytes of memory, raise, or lose
the good URLs around the bad ones: ``read_sitemap`` returns every usable
``<loc>`` it found and a list of problems, which the caller logs as one
warning line (webspider.politeness.sitemaps).

- ``.xml.gz`` (gzip magic number) is unpacked up to ``max_size`` bytes;
  beyond it, or past damaged data, what was unpacked is read; a file cut
  short (by that, or as it was served) loses the entry the cut went through,
  not half its URL.
- The XML is read with lxml's recovering parser, as Scrapy's own sitemap
  reader does (entities not resolved, no network: XXE and billion laughs
  are inert), streaming, each entry dropped once read. A bare ``&`` (the
  commonest flaw of generated sitemaps: ``?a=1&b=2``) is read as ``&amp;``
  first, since lxml's recovery would drop ``&b`` from the URL.
- ``<loc>`` of ``<url>`` (urlset) or ``<sitemap>`` (sitemapindex) entries
  that are not absolute http(s) URLs are left out and counted.

Pure: nothing here knows Scrapy.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, field
from gzip import GzipFile
from io import BytesIO
from urllib.parse import urlsplit

import lxml.etree

from webspider.utils.url import FETCHABLE_SCHEMES

URLSET = "urlset"
SITEMAPINDEX = "sitemapindex"
_ENTRIES = {URLSET: "url", SITEMAPINDEX: "sitemap"}

_GZIP_MAGIC = b"\x1f\x8b\x08"
_ROOT_END_RE = re.compile(rb"</(?:[\w.-]+:)?(?:urlset|sitemapindex)\s*>\s*\Z")
_ENTRY_ENDS = (b"</url>", b"</sitemap>")
_CHUNK = 64 * 1024
# "&" that starts no character or entity reference (outside CDATA, where
# "&" is text: a CDATA section left open runs to the end, as for lxml)
_BARE_AMP_RE = re.compile(rb"&(?![A-Za-z][A-Za-z0-9._-]*;|#[0-9]+;|#x[0-9A-Fa-f]+;)")
_AMP_OR_CDATA_RE = re.compile(
    rb"<!\[CDATA\[.*?(?:\]\]>|\Z)|" + _BARE_AMP_RE.pattern, re.DOTALL
)


@dataclass
class SitemapRead:
    """What one sitemap file gave."""

    #: ``urlset``, ``sitemapindex``, or "" when it is neither
    kind: str = ""
    #: the usable ``<loc>`` URLs, in file order
    locs: list[str] = field(default_factory=list)
    #: what was wrong, one short phrase each (empty: nothing)
    problems: list[str] = field(default_factory=list)
    #: ``<loc>`` values left out (not absolute http(s) URLs), and the first
    bad_locs: int = 0
    first_bad: str = ""


def read_sitemap(body: bytes, max_size: int = 0) -> SitemapRead:
    """The sitemap in ``body`` (maybe gzipped; ``max_size``: most bytes
    unpacked, 0 for no limit)."""
    read = SitemapRead()
    cut = ""
    if body[:3] == _GZIP_MAGIC:
        body, cut = gunzip(body, max_size)
        if cut:
            read.problems.append(cut)
    body, bare = escape_bare_ampersands(whole_entries(body))
    # XML cut short by gunzip ends too soon: no news, not worth saying
    _parse(body, read, report_errors=not cut)
    if bare and not any(p.startswith("malformed XML") for p in read.problems):
        read.problems.append(f"malformed XML ({bare} bare '&' read as '&amp;')")
    if read.bad_locs:
        read.problems.append(
            f"{read.bad_locs} <loc> not an http(s) URL, left out "
            f"(first: {read.first_bad[:200]!r})"
        )
    return read


def whole_entries(body: bytes) -> bytes:
    """``body`` without the entry its end cut in two: lxml's recovery would
    close it and give half a URL (``/9`` of ``/960``). A sitemap whose root
    element is closed is left as it is."""
    if _ROOT_END_RE.search(body[-100:]):
        return body
    ends = [at + len(tag) for tag in _ENTRY_ENDS if (at := body.rfind(tag)) >= 0]
    return body[: max(ends)] if ends else body


def escape_bare_ampersands(body: bytes) -> tuple[bytes, int]:
    """``body`` with each ``&`` that starts no reference written ``&amp;``
    (not in CDATA sections), and how many there were."""
    if _BARE_AMP_RE.search(body) is None:
        return body, 0
    count = 0

    def escape(match: re.Match[bytes]) -> bytes:
        nonlocal count
        if match.group(0) == b"&":
            count += 1
            return b"&amp;"
        return match.group(0)

    return _AMP_OR_CDATA_RE.sub(escape, body), count


def gunzip(data: bytes, max_size: int = 0) -> tuple[bytes, str]:
    """``data`` unpacked, at most ``max_size`` bytes of it (0: all), and
    what stopped it short ("" when nothing did)."""
    stream = GzipFile(fileobj=BytesIO(data))
    out = BytesIO()
    size = 0
    try:
        while chunk := stream.read1(_CHUNK):
            if max_size and size + len(chunk) > max_size:
                out.write(chunk[: max_size - size])
                return out.getvalue(), (
                    f"unpacks to more than {max_size} bytes (DOWNLOAD_MAXSIZE): "
                    "only those are read"
                )
            out.write(chunk)
            size += len(chunk)
    except (OSError, EOFError, zlib.error, struct.error) as exc:
        return out.getvalue(), f"damaged gzip data after {size} bytes ({exc})"
    return out.getvalue(), ""


def _local(tag: object) -> str:
    # "{namespace}loc" → "loc"; comments and processing instructions have
    # no string tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _parse(body: bytes, read: SitemapRead, report_errors: bool = True) -> None:
    events = lxml.etree.iterparse(
        BytesIO(body),
        events=("start", "end"),
        recover=True,
        resolve_entities=False,
        no_network=True,
        remove_comments=True,
        remove_pis=True,
        collect_ids=False,
        huge_tree=False,
    )
    entry = ""
    depth = 0
    try:
        for event, elem in events:
            if event == "start":
                depth += 1
                if depth == 1:
                    read.kind = _local(elem.tag)
                    entry = _ENTRIES.get(read.kind, "")
                continue
            depth -= 1
            name = _local(elem.tag)
            if entry and name == entry:
                _take(elem, read)
                # stream: forget what was read (a 64 MiB sitemap would
                # otherwise be kept whole as a tree)
                elem.clear()
                parent = elem.getparent()
                if parent is not None:
                    while elem.getprevious() is not None:
                        del parent[0]
    except lxml.etree.LxmlError as exc:
        read.problems.append(f"{'malformed' if read.kind else 'not'} XML ({exc})")
        read.kind = read.kind if entry else ""
        return
    errors = list(events.error_log)
    if not read.kind:
        read.problems.append("not XML")
    elif not entry:
        read.problems.append(f"not a sitemap (its root element is <{read.kind}>)")
        read.kind = ""
    elif errors and report_errors:
        first = errors[0]
        read.problems.append(
            f"malformed XML (line {first.line}: {first.message.strip()}; "
            f"{len(errors)} error(s)), read as far as it goes"
        )


def _take(elem: lxml.etree._Element, read: SitemapRead) -> None:
    for child in elem:
        if _local(child.tag) == "loc":
            loc = (child.text or "").strip()
            if usable(loc):
                read.locs.append(loc)
            else:
                read.bad_locs += 1
                read.first_bad = read.first_bad or loc or "(empty)"
            return


def usable(url: str) -> bool:
    """Whether a ``<loc>`` is an absolute http(s) URL with a host."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return parts.scheme.lower() in FETCHABLE_SCHEMES and bool(parts.hostname)
