"""The page worker: a second process that reads pages and writes the mirror.

A crawl's process spends one core on Scrapy (the downloader, the engine, the
spider). Reading each page (webspider.page.links) and converting and writing
its mirror file (webspider.mirror.links, webspider.mirror.safefs) need
nothing of Scrapy, so this process does them on a second core: the crawl
sends it each page's bytes once, gets back the page's links (a few per page,
where the scan records every link value with its place), and later tells it
where the page goes in the mirror and where the files of its links are. The
worker keeps the pages it read until then (the last few only), so the bytes
cross once and the scan's spans never cross at all.

At the end of the crawl it fixes up batches of the mirror's files
(webspider.mirror.fixup.fix_job) while the crawl's process fixes up others.

The crawl's side is webspider.pageworker.client. Messages are frames of
a header and raw bytes (struct ``>II``: their lengths) on the worker's
stdin and stdout. A header is a dict of plain values in ``marshal``'s
format: both ends are the same interpreter (the crawl starts this one as
``sys.executable``), the pipes are theirs alone, and marshal writes the
worker's answers (a page's links) several times faster than JSON did, with
tuples kept as tuples. Never pickles: marshal builds values, never calls
anything. Everything the worker answers the crawl's
process could work out itself, and does when the worker is gone: an answer
is an acceleration, never the only way.

Run as ``python -m webspider.pageworker.worker``. Pure: no Scrapy.
"""

from __future__ import annotations

import contextlib
import gc
import json
import marshal
import os
import select
import signal
import struct
import sys
import zlib
from collections import OrderedDict, deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from webspider.mirror.entry import Entry, pack_restore
from webspider.mirror.fixup import fix_job, keeps_spans
from webspider.mirror.links import convert
from webspider.mirror.paths import original_path, url_path
from webspider.mirror.safefs import SafeTree, Segments, refusal_json
from webspider.mirror.targets import TargetIndex
from webspider.page.encoding import body_encoding
from webspider.page.links import (
    LINK_RULES,
    Link,
    LinkRule,
    ParsedPage,
    extract_css,
    extract_page,
)
from webspider.page.spans import pack_spans
from webspider.utils.digests import sha256_hex
from webspider.utils.memory import release_free_memory
from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from collections.abc import Iterable

_FRAME = struct.Struct(">II")
#: a header is a few URLs and link lists; a body is at most DOWNLOAD_MAXSIZE
MAX_HEADER = 256 * 1024 * 1024
MAX_BODY = 1 << 31

HTML, CSS = "html", "css"
#: an answer: a header and bytes
Reply = tuple[dict[str, Any], bytes]
#: the bytes of the pages kept for the mirror, at most (beyond, the oldest
#: are dropped and the crawl stores them itself)
HELD_BYTES = 256 * 1024 * 1024
#: frames handled between two returns of freed memory to the system
RELEASE_EVERY = 1024
#: the answers written so far wait for the next frame's when it is here
#: already and is not a page larger than this (one write for both)
QUICK_BODY = 64 * 1024


class FrameError(ValueError):
    """The other side sent something that is not a frame."""


def frame_head(header: dict[str, Any], body: bytes = b"") -> bytes:
    """A frame but its body (sent after it as it is, never copied)."""
    try:
        data = marshal.dumps(header)
    except ValueError:
        # a value marshal does not take (a subclass of str, int or dict:
        # marshal wants the exact types): its plain form, as JSON gives it
        data = marshal.dumps(json.loads(json.dumps(header)))
    return _FRAME.pack(len(data), len(body)) + data


class FrameReader:
    """Frames out of a stream read in chunks of any size."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[dict[str, Any], bytes]]:
        buffer = self._buffer
        buffer += data
        frames = []
        while len(buffer) >= _FRAME.size:
            size, body_size = _FRAME.unpack_from(buffer)
            if size > MAX_HEADER or body_size > MAX_BODY:
                raise FrameError("frame too large")
            end = _FRAME.size + size + body_size
            if len(buffer) < end:
                break
            # read in place, and one copy of the body (a slice of the
            # bytearray would be two)
            with memoryview(buffer) as view:
                try:
                    header = marshal.loads(view[_FRAME.size : _FRAME.size + size])
                except (ValueError, EOFError, TypeError) as exc:
                    why = f"frame header is not marshal data: {exc}"
                    raise FrameError(why) from None
                body = bytes(view[end - body_size : end])
            if type(header) is not dict:
                raise FrameError("frame header is not a dict")
            frames.append((header, body))
            del buffer[:end]
        return frames


# -- pages, as they cross ----------------------------------------------------------
def page_to_json(page: ParsedPage, in_place: bool) -> dict[str, Any]:
    """What the crawl needs of a page (not its spans: those stay here). Link
    texts that are offsets stay offsets when ``in_place`` (the crawl has the
    same bytes); otherwise they are read here. Compact, as JSON is most of
    what a small page costs the crawl's process to receive: each link's
    fields but the URL, kind and tag only when they differ from Link's
    defaults, what the page lacks left out, and the links' canonical URLs
    (ParsedPage.link_keys, worked out here) only where they differ from the
    URL."""

    def text(value: str | int) -> str | int:
        return value if in_place else page.text(value)

    rows: list[list[Any]] = []
    for link in page.links:
        row: list[Any] = [link.url, link.kind, link.tag]
        more = link.more_fragments
        if more is not None:
            if not in_place:
                more = {f: text(t) for f, t in more.items()}
            row += (link.text, link.nofollow, link.fragment, more)
        elif link.fragment:
            row += (link.text, link.nofollow, link.fragment)
        elif link.nofollow:
            row += (link.text, True)
        elif link.text:
            row.append(link.text)
        rows.append(row)
    data: dict[str, Any] = {"base_url": page.base_url, "links": rows}
    if page.title is not None:
        data["title"] = page.title
    if page.metas:
        data["metas"] = page.metas
    if page.unsupported_links:
        data["unsupported"] = page.unsupported_links
    if page.limited is not None:
        data["limited"] = page.limited
    if page.local_fragments:
        data["local"] = (
            page.local_fragments
            if in_place
            else [(fragment, text(t)) for fragment, t in page.local_fragments]
        )
    other = [
        (i, key)
        for i, (link, key) in enumerate(zip(page.links, page.link_keys(), strict=True))
        if key != link.url
    ]
    if other:
        data["keys"] = other
    return data


def page_from_json(url: str, data: dict[str, Any]) -> ParsedPage:
    """The ParsedPage of page_to_json's answer, without spans (the mirror
    scans again if it must convert the page itself)."""
    rows = data["links"]
    keys = [row[0] for row in rows]
    for i, key in data.get("keys", ()):
        keys[i] = key
    return ParsedPage(
        url=url,
        base_url=data["base_url"],
        title=data.get("title"),
        links=[Link(*row) for row in rows],
        # lists of tuples, as page_to_json made them (marshal keeps tuples)
        metas=data.get("metas") or [],
        unsupported_links=data.get("unsupported", 0),
        local_fragments=data.get("local") or [],
        spans=None,
        limited=data.get("limited"),
        keys=keys,
        content_hash=data.get("sha256"),
    )


def targets_from_json(data: dict[str, Any], page: ParsedPage) -> TargetIndex:
    """The TargetIndex of a store message (PageWorker._targets): the URLs
    named by their place among the page's link keys put back."""
    targets = TargetIndex.from_json(data)
    at = data.get("at")
    if at:
        keys = page.link_keys()
        where = targets.where
        for i, value in at:
            where[keys[i]] = value
    return targets


def rules_to_json(rules: Iterable[LinkRule]) -> list[dict[str, Any]]:
    return [asdict(rule) for rule in rules]


def rules_from_json(data: list[dict[str, Any]]) -> tuple[LinkRule, ...]:
    return tuple(LinkRule(**fields) for fields in data)


# -- the worker --------------------------------------------------------------------
@dataclass
class _Held:
    url: str
    body: bytes
    encoding: str | None
    page: ParsedPage
    #: ``"/".join(url_path(canonical_url(url)))``, the path a record's
    #: ``where_value`` of 1 stands for (None: not worked out)
    plain: str | None = None


#: a store message's ``entry``: the fields of the page's index record that
#: the crawl knows and this process does not (Entry's names), by position
ENTRY_FIELDS = (
    "hash",
    "size",
    "run",
    "content_type",
    "encoding",
    "etag",
    "last_modified",
)


class Worker:
    """Answers one message at a time (see the module docstring)."""

    def __init__(self, keep: int = 64) -> None:
        self.rules: tuple[LinkRule, ...] | None = None
        self.tree: SafeTree | None = None
        self.keep_originals = False
        #: the pages read and not yet stored, oldest first
        self.held: OrderedDict[int, _Held] = OrderedDict()
        self.held_bytes = 0
        self.keep = keep
        #: the crawl's bounds on reading one page (webspider.page.options)
        self.max_links: int | None = None
        self.budget: float | None = None

    def forget(self, ident: int) -> _Held | None:
        held = self.held.pop(ident, None)
        if held is not None:
            self.held_bytes -= len(held.body)
        return held

    def handle(self, header: dict[str, Any], body: bytes) -> Reply | None:
        """The answer to a message (a header and bytes), if it has one."""
        op = header.get("op")
        if op == "parse":
            return self.parse(header, body), b""
        if op == "store":
            return self.store(header)
        if op == "forget":
            self.forget(header["id"])
            return None
        if op == "forget_plans":  # the crawl's own write found the tree changed
            if self.tree is not None:
                self.tree.forget_plans()
            return None
        if op == "fixup":
            return self.fix_up(header), b""
        if op == "init":
            self.init(header)
            ident = header.get("id")
            return None if ident is None else ({"id": ident, "ready": True}, b"")
        raise FrameError(f"unknown message {op!r}")

    def init(self, header: dict[str, Any]) -> None:
        rules = header.get("rules")
        if rules is not None:
            self.rules = rules_from_json(rules)
        elif self.rules is None:
            self.rules = LINK_RULES
        self.keep = int(header.get("keep", self.keep))
        bounds = header.get("bounds")
        if bounds is not None:
            self.max_links, self.budget = bounds["max_links"], bounds["budget"]
        mirror = header.get("mirror")
        if mirror is not None:
            if self.tree is not None:
                self.tree.close()
            forbidden = [tuple(path) for path in mirror["forbidden"]]
            self.tree = SafeTree(Path(mirror["root"]), forbidden)
            self.keep_originals = bool(mirror["keep_originals"])

    def parse(self, header: dict[str, Any], body: bytes) -> dict[str, Any]:
        url, encoding, ident = header["url"], header.get("encoding"), header["id"]
        found = None
        if encoding is None and "content_type" in header:
            # the response was made without an encoding: Scrapy's answer,
            # worked out here (webspider.page.encoding), and handed back
            encoding = found = body_encoding(body, header["content_type"])
        if header.get("kind") == CSS:
            page = extract_css(body, url, encoding, max_links=self.max_links)
        else:
            rules = LINK_RULES if self.rules is None else self.rules
            page = extract_page(
                body, url, encoding, rules, max_links=self.max_links, budget=self.budget
            )
        in_place = page.spans is not None
        data = page_to_json(page, in_place)
        # the page item's content_hash, worked out here, off the crawl's core
        data["sha256"] = sha256_hex(body)
        answer = {"id": ident, "page": data, "in_place": in_place}
        if found is not None:
            answer["encoding"] = found
        if header.get("keep") and self.tree is not None:
            held = self.held[ident] = _Held(url, body, encoding, page)
            self.held_bytes += len(body)
            while len(self.held) > self.keep or self.held_bytes > HELD_BYTES:
                self.held_bytes -= len(self.held.popitem(last=False)[1].body)
            # where the mirror will want it (webspider.mirror.store.prepare):
            # worked out here, off the crawl's core
            with contextlib.suppress(ValueError):  # then worked out there
                path = url_path(url, header.get("kind") != CSS)
                answer["path"] = path
                # and what its index record's path is compared with
                # (webspider.mirror.entry.where_value)
                answer["plain"] = held.plain = "/".join(url_path(canonical_url(url)))
                planned = self.plan(path)
                if planned is not None:
                    # true: as ``path`` (nearly always; not sent twice)
                    answer["planned"] = True if planned == path else planned
        return answer

    def plan(self, path: Segments) -> Segments | None:
        """The path the mirror's write of ``path`` would use now
        (``SafeTree.plan``), for the crawl's ``MirrorStore.prepare``: planned
        here, where the files are created, it costs the crawl's process
        no look-up in a folder this process is filling (a ``stat`` that
        waited for the folder's lock while a file was created in it). None
        when the plan is refused (a symlink, an unsafe name): the crawl
        plans it itself, and refuses it there.

        Planned as the page is read, before the stores that come after it:
        a file or folder those create where this page's path goes is found
        by its write, which decides (the path used is answered, the crawl
        records it), as when the crawl planned before those stores were
        done."""
        assert self.tree is not None
        try:
            return self.tree.plan(path)
        except OSError:  # UnsafePathError included
            return None

    def store(self, header: dict[str, Any]) -> Reply:
        ident = header["id"]
        held = self.forget(ident)
        if held is None or self.tree is None:
            return {"id": ident, "missing": True}, b""
        path = tuple(header["path"])
        body = held.body
        conversion = None
        targets = header.get("targets")
        if targets is not None:
            html = header.get("kind") != CSS
            conversion = convert(
                body,
                targets_from_json(targets, held.page),
                path,
                page_url=held.url,
                base_url=held.page.base_url if html else held.url,
                encoding=held.encoding,
                html=html,
                page=held.page if html else None,
            )
        try:
            if conversion is None or conversion.data == body:
                used = self.tree.write(path, body)
            else:
                used = self.tree.write(path, conversion.data)
                if self.keep_originals:
                    self.tree.write(original_path(used), body)
        except OSError as exc:  # UnsafePathError included
            self.tree.forget_plans()  # refused: the tree may have changed
            return {"id": ident, **refusal_json(exc)}, b""
        if used != path:
            # the tree changed under the plan: the folders are walked again
            self.tree.forget_plans()
        reply: dict[str, Any] = {"id": ident, "used": used}
        packed = b""
        packed_restore: dict[str, Any] | None = None
        if conversion is not None:
            # the kept links by target (``plain``) need no expected path, nor
            # spans but a large page's: they are forgotten when their file is
            # written (webspider.mirror.fixup.keeps_spans)
            plain = conversion.plain or []
            kept = conversion.kept
            if plain:
                skip = set(plain)
                kept = {k: v for k, v in kept.items() if k not in skip}
            reply.update(
                count=conversion.count,
                pending=sorted(conversion.pending),
                kept=kept,
                plain=plain,
            )
            if conversion.restore:
                if "key" in header:
                    # the index record's form of it, worked out here, off the
                    # crawl's core (the page's canonical URL is its key): the
                    # crawl needs no other (Entry.index_json)
                    packed_restore = pack_restore(header["key"], conversion.restore)
                    reply["packed"] = packed_restore
                else:
                    reply["restore"] = conversion.restore
            if conversion.spans and keeps_spans(
                len(body), bool(conversion.pending or kept), bool(plain)
            ):
                # where the links the fix-up may change are in the file written
                # (MirrorStore remembers them: the fix-up then needs no scan)
                reply["crc"] = zlib.crc32(conversion.data)
                packed = pack_spans(conversion.spans).tobytes()
        fields = header.get("entry")
        if fields is not None and "key" in header and held.plain is not None:
            # the page's index record (Entry.index_json), made here, off the
            # crawl's core: the crawl stores it as it comes (bench/README.md,
            # "The mirror's index record made by the page worker")
            entry = Entry(
                url=header["key"],
                path=tuple(used),
                kind=header.get("kind") or "",
                converted=conversion is not None and conversion.count > 0,
                **dict(zip(ENTRY_FIELDS, fields, strict=True)),
            )
            reply["record"] = entry.index_json(
                "/".join(used) == held.plain, packed_restore
            )
        return reply, packed

    def fix_up(self, header: dict[str, Any]) -> dict[str, Any]:
        """The end-of-crawl fix-up of the files of ``header["jobs"]``
        (webspider.mirror.fixup.fix_job): the crawl writes the records."""
        if self.tree is None:
            raise FrameError("no mirror to fix up")
        targets = TargetIndex.from_json(header["targets"])
        fixed = [fix_job(self.tree, job, targets) for job in header["jobs"]]
        return {"id": header["id"], "fixed": fixed}


class _Inbox:
    """The frames that arrived, read as they come: what changes the state or
    stores a page goes before reading more pages (a page waiting to be
    stored holds the crawl's memory; one waiting to be read does not), but
    a page to read overtakes pages to store while few are held
    (``next(reads_first=True)``): a page waiting to be read holds one of
    the crawl's download slots (webspider.pageworker.readahead), and with
    the mirror on, the stores queued ahead of it kept the crawl waiting
    for its downloads a quarter of the time (bench/README.md, "The
    mirror's work a page, third pass")."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader = FrameReader()
        self.urgent: deque[tuple[dict[str, Any], bytes]] = deque()
        self.pages: deque[tuple[dict[str, Any], bytes]] = deque()
        #: frames in ``urgent`` that are not stores (no page overtakes them)
        self.others = 0
        self.closed = False

    def _read(self, wait: bool) -> None:
        if not wait and not select.select([self.fd], [], [], 0)[0]:
            return
        data = os.read(self.fd, 1 << 20)
        if not data:
            self.closed = True
            return
        for frame in self.reader.feed(data):
            op = frame[0].get("op")
            if op == "parse":
                self.pages.append(frame)
            else:
                self.urgent.append(frame)
                if op != "store":
                    self.others += 1

    def quick_next(self) -> bool:
        """Whether the next frame is here already (read without waiting) and
        quick to answer: not a page of more than QUICK_BODY bytes."""
        if not self.closed and not (self.urgent or self.pages):
            self._read(wait=False)
        if self.urgent:
            return True
        return bool(self.pages) and len(self.pages[0][1]) <= QUICK_BODY

    def next(self, reads_first: bool = False) -> tuple[dict[str, Any], bytes] | None:
        """The next frame to answer; None when the stream ended.
        ``reads_first``: a page to read goes before the pages to store
        ahead of it, when only those are (every other frame keeps its
        place: a state change, a page to forget)."""
        while True:
            if not self.closed:
                self._read(wait=False)
            urgent = self.urgent
            if urgent:
                if reads_first and self.pages and not self.others:
                    return self.pages.popleft()
                frame = urgent.popleft()
                if frame[0].get("op") != "store":
                    self.others -= 1
                return frame
            if self.pages:
                return self.pages.popleft()
            if self.closed:
                return None
            self._read(wait=True)


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """Answer frames from ``stdin`` on ``stdout`` until the stream ends."""
    worker = Worker()
    inbox = _Inbox(stdin.fileno())
    handled = 0
    while True:
        # The answers to the frames that came together go in one write: each
        # write wakes the crawl's event loop, a read and a callback there
        # (the busier process) for each. Not held while a large page is read.
        if not inbox.quick_next():
            stdout.flush()
        # pages are read first while the pages held for the mirror stay
        # well below the bound past which the oldest are dropped (and then
        # stored by the crawl's process itself)
        frame = inbox.next(reads_first=len(worker.held) < worker.keep // 2)
        if frame is None or frame[0].get("op") == "stop":
            stdout.flush()
            if worker.tree is not None:
                worker.tree.close()
            return 0
        header, body = frame
        try:
            reply = worker.handle(header, body)
        except Exception as exc:  # the crawl does the work itself then
            error = f"{type(exc).__name__}: {exc}"
            reply = {"id": header.get("id"), "error": error}, b""
        if reply is not None:
            head, body = frame_head(*reply), reply[1]
            stdout.write(head + body if body else head)
        handled += 1
        if not handled % RELEASE_EVERY:
            release_free_memory()


def main() -> int:
    # The crawl starts this process in a session of its own, out of reach of
    # a terminal's Ctrl-C; started otherwise (by hand, a test), Ctrl-C is
    # still the crawl's: it stops gracefully and then closes this stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # as the crawl's process does (webspider.commands.crawl): a scan makes
    # many small objects, and the modules' never need collecting
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    # what the imports read and freed (webspider.utils.memory)
    release_free_memory()
    try:
        return serve(sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:  # the crawl is gone
        return 1
    except Exception as exc:  # one line: the crawl says it goes on without it
        print(f"webspider page worker: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
