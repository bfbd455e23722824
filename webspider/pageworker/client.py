"""The crawl's side of the page worker (webspider.pageworker.worker).

The worker is a second process that reads each HTML page and stylesheet (the
links the crawl follows) and converts and writes the mirror's copy of it, on
a second core: the crawl's own process is busy with Scrapy. The read-ahead
middleware (webspider.pageworker.readahead) sends each page to it
as its response arrives and waits for its links without blocking the crawl;
the mirror (webspider.mirror.store) then asks the worker to store
the page it still holds, handing it where the files of that page's links are
(a snapshot read from the mirror's state for this page: the worker keeps
nothing per page).

Everything the worker does, the crawl can do itself, and does when the
worker is off (``WEBSPIDER_PAGE_WORKER = False``), failed to start, died, is
stuck (``WEBSPIDER_PAGE_WORKER_TIMEOUT``), or did not keep a page: the output
is the same either way.

At the end of the crawl the worker also shares the mirror's fix-up
(webspider.mirror.fixup): it reads, rewrites and writes the files of
batches of the pages whose links changed while the crawl's process does
others and writes the records.

Stats: ``webspider/page_worker/parsed_count``, ``…/stored_count``,
``…/fixed_up_count``, ``…/fallback_count/<parse|store|fixup>``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import logging
import os
import subprocess
import sys
from array import array
from collections import deque
from functools import partial
from importlib.machinery import PathFinder
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import TextResponse

from webspider.internals import give_encoding, given_encoding
from webspider.mirror.entry import RECORD_FIELDS
from webspider.mirror.links import Conversion
from webspider.mirror.options import MirrorOptions
from webspider.mirror.safefs import Segments, refusal_error
from webspider.mirror.store import MirrorStore
from webspider.page.links import LINK_RULES, LinkRule, ParsedPage, scannable
from webspider.page.linktext import link_text
from webspider.page.options import PageOptions
from webspider.page.response import parsed_page
from webspider.pageworker.options import PageWorkerOptions
from webspider.pageworker.worker import (
    FrameError,
    FrameReader,
    Reply,
    frame_head,
    page_from_json,
    rules_to_json,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from webspider.mirror.entry import Entry
    from webspider.mirror.targets import TargetIndex

logger = logging.getLogger(__name__)

STATS_PARSED = "webspider/page_worker/parsed_count"
STATS_STORED = "webspider/page_worker/stored_count"
#: pages whose mirror file the worker fixed up at the end of the crawl
STATS_FIXED_UP = "webspider/page_worker/fixed_up_count"
STATS_FALLBACK = "webspider/page_worker/fallback_count"  # /<parse|store>
#: pages the crawl's process read itself because every other page of the
#: crawl was waiting for the worker (webspider.pageworker.readahead)
STATS_READ_HERE = "webspider/page_worker/read_here_count"
#: bodies up to this size are sent in one write with their frame's head,
#: and frames up to this size are joined into one write; larger bodies go by
#: reference, as they are (no copy)
JOIN_BELOW = 64 * 1024
#: seconds the watch timer may fire late before its lateness says that this
#: process did not run (stopped or starved) rather than the worker stalled
_LATE = 1.0


#: the module the worker's process runs
WORKER_MODULE = "webspider.pageworker.worker"
#: the folder that holds the webspider package this process runs
_HOME = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _worker_path() -> str:
    """The worker's PYTHONPATH: this process's ``sys.path`` (a scrapyd egg
    included), with webspider's own folder first when those paths alone
    would find another webspider, or none (an editable install's is found
    by a .pth file's import hook, not by a path): the worker runs the same
    code as the crawl."""
    paths = list(sys.path)
    spec = PathFinder.find_spec("webspider", paths)
    origin = spec.origin if spec is not None else None
    found = os.path.dirname(os.path.dirname(origin)) if origin else None
    if found is None or os.path.realpath(found) != os.path.realpath(_HOME):
        paths.insert(0, _HOME)
    return os.pathsep.join(paths)


def _spawn() -> subprocess.Popen[bytes]:
    """The worker's process (OSError: it could not be started)."""
    process = subprocess.Popen(
        # -S: no site module: the paths it would add are given (below), and
        # what this Python's .pth files and sitecustomize import the worker
        # never uses (1.1 MB of its RSS here)
        [sys.executable, "-S", "-m", WORKER_MODULE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": _worker_path()},
        # out of the terminal's process group: a Ctrl-C is the crawl's to
        # handle (it closes this process's stdin), and one while this
        # process still imports printed Python's KeyboardInterrupt traceback
        # into the crawl's output; it ends when its stdin does, the crawl
        # killed included
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    import fcntl  # noqa: PLC0415 - POSIX only (PageWorkerOptions)

    set_pipe_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux
    if set_pipe_size is not None:
        # larger: fewer writes of pages; and the answers (a large page's
        # links are a megabyte) wait there for the crawl's busy process
        # without holding the worker in its write (64 KiB by default)
        for pipe in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                fcntl.fcntl(pipe, set_pipe_size, 1 << 20)
    return process


#: the worker started ahead of the crawl (start_early), until the crawl's
#: PageWorker takes it
_early: subprocess.Popen[bytes] | None = None


def start_early() -> None:
    """Start the page worker now, for the crawl's PageWorker to take when the
    spider opens: the worker's start (an interpreter and its imports,
    0.1-0.2 s) then runs on the other core while Scrapy builds the crawl,
    instead of while the first pages arrive (which the crawl's process
    reads itself until the worker is up: python3.11-doc's first level,
    a 2.5 MB contents.html among them). The crawl command calls it once the
    settings say the worker is on; a worker nobody takes ends with this
    process (its stdin closed)."""
    global _early  # noqa: PLW0603 - one a process, taken once
    if _early is not None:
        return
    try:
        _early = _spawn()
    except OSError:
        return  # PageWorker tries again, and says why
    atexit.register(_discard_early)


def _take_early() -> subprocess.Popen[bytes] | None:
    global _early
    process, _early = _early, None
    return process


def _discard_early() -> None:
    """End the worker started early that no crawl took."""
    process = _take_early()
    if process is None:
        return
    assert process.stdin is not None
    with contextlib.suppress(OSError):
        process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    _close_pipes(process)


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def record_mismatch(record: Any, entry: Entry) -> str | None:
    """What is wrong with the index record the worker made for ``entry``
    (None: nothing this process can see cheaply; where it says the file is
    is checked where that is known: MirrorState.put). A page's record is
    read for every link to it (MirrorState.targets): one that is not a
    record, or says another size or run, is not stored."""
    if type(record) is not list or not 2 <= len(record) <= RECORD_FIELDS:
        return "is not an index record"
    if (
        type(record[0]) is not str
        or record[1] != entry.size
        or (record[2] if len(record) > 2 else 0) != entry.run
    ):
        return "does not match the page"
    return None


class _Answers(asyncio.Protocol):
    """Reads the worker's answers on the event loop."""

    def __init__(self, worker: PageWorker) -> None:
        self.worker = worker
        self.frames = FrameReader()

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.frames.feed(data)
        except (FrameError, ValueError):
            self.worker.lost("it sent garbage")
            return
        for header, body in frames:
            self.worker.answered(header, body)

    def connection_lost(self, exc: Exception | None) -> None:
        self.worker.lost("it stopped")


class _Pipe(asyncio.BaseProtocol):
    """The worker's stdin as the event loop writes it: says when the pipe is
    full, so that frames wait in PageWorker's outbox (by reference) rather
    than in the transport's buffer (a copy of each page)."""

    def __init__(self, worker: PageWorker) -> None:
        self.worker = worker

    def pause_writing(self) -> None:
        self.worker._paused = True

    def resume_writing(self) -> None:
        self.worker._paused = False
        self.worker._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.worker.lost("it stopped")


class PageWorker:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        options = PageWorkerOptions.of(settings)
        if not options.enabled:
            raise NotConfigured
        self.crawler = crawler
        #: pages the worker keeps for the mirror until it stores them
        self.keep = 2 * max(settings.getint("CONCURRENT_REQUESTS"), 1) + 16
        self.timeout = options.timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._writer: asyncio.WriteTransport | None = None
        #: frames (heads and bodies) waiting for the pipe: before it is
        #: connected, or while it is full. The transport copies what it cannot
        #: write at once; a page sent while the worker reads another would be
        #: a second copy of its body (one per page sent meanwhile).
        self._outbox: deque[bytes] = deque()
        self._paused = False
        #: a write of the outbox is due (call_soon)
        self._flush_soon = False
        #: the task connecting the pipes (kept: the loop only holds it weakly)
        self._connecting: asyncio.Task[None] | None = None
        self._answers: dict[int, asyncio.Future[Reply | None]] = {}
        #: (when its answer is due, id) of each message asked, oldest first:
        #: one timer watches them all (asyncio.wait_for per message cost a
        #: timer, a waiter future and their callbacks, twice a page)
        self._due: deque[tuple[float, int]] = deque()
        self._watch: asyncio.TimerHandle | None = None
        self._ids = itertools.count(1)
        #: response → the id the worker holds its page under
        self._held: WeakKeyDictionary[Response, int] = WeakKeyDictionary()
        #: response → its mirror path as the worker worked it out
        #: (url_path), the path url_path gives its canonical URL, and the
        #: path the worker's SafeTree.plan gave (None: not planned there)
        self._paths: WeakKeyDictionary[
            Response, tuple[Segments, str | None, Segments | None]
        ] = WeakKeyDictionary()
        self._failed = False
        #: the worker answered its first message: it reads pages from now on
        self._ready = False
        #: its stop, once begun (close, or mirror_done)
        self._closing: asyncio.Future[None] | None = None
        self._ready_id = 0
        #: pages it was asked to read and has not answered yet
        self.reading = 0
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- lifecycle ---------------------------------------------------------------
    def _start(self) -> bool:
        """Start the worker on first use (from the reactor thread); whether
        it runs."""
        if self._process is not None or self._failed:
            return self.running
        self._failed = True  # unless it starts
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the asyncio reactor: the crawl does it all
            _discard_early()
            logger.info(
                "Page worker off: the reactor (TWISTED_REACTOR) runs no asyncio "
                "event loop; pages are read here"
            )
            return False
        spider = self.crawler.spider
        rules = tuple(getattr(spider, "link_rules", LINK_RULES))
        if not all(type(rule) is LinkRule for rule in rules):
            _discard_early()
            logger.info("Page worker off: the spider's link rules are not LinkRules")
            return False
        process = _take_early()
        if process is not None and process.poll() is not None:
            _close_pipes(process)  # it died meanwhile
            process = None
        if process is None:
            try:
                process = _spawn()
            except OSError as exc:
                logger.warning("Page worker not started (%s): pages are read here", exc)
                return False
        self._process, self._loop, self._failed = process, loop, False
        # Both pipes are the event loop's: no thread (they would fight the
        # reactor for the GIL on every read and write).
        self._connecting = loop.create_task(self._connect(process))
        # Its answer says it is up: until then pages are read here (a crawl of
        # a few pages need not wait for a process to start).
        self._ready_id = next(self._ids)
        bounds = PageOptions.of(self.crawler.settings)
        self._send(
            {
                "op": "init",
                "id": self._ready_id,
                "rules": rules_to_json(rules),
                "keep": self.keep,
                "bounds": {"max_links": bounds.link_cap, "budget": bounds.budget},
            }
        )
        return True

    async def _connect(self, process: subprocess.Popen[bytes]) -> None:
        assert self._loop is not None
        try:
            self._writer, _ = await self._loop.connect_write_pipe(
                lambda: _Pipe(self), process.stdin
            )
            await self._loop.connect_read_pipe(lambda: _Answers(self), process.stdout)
        except OSError as exc:
            self.lost(str(exc))
            return
        self._flush()

    def spider_opened(self) -> None:
        self._start()  # it starts while the first requests go out
        mirror = self.crawler.get_extension(MirrorStore)
        if mirror is not None:
            mirror.attach(self)

    def start_mirror(self, root: str, forbidden: list[tuple[str, ...]]) -> bool:
        """Let the worker write the mirror at ``root``; whether it will."""
        if not self._start():
            return False
        keep_originals = MirrorOptions.of(self.crawler.settings).keep_originals
        mirror = {
            "root": root,
            "forbidden": forbidden,
            "keep_originals": keep_originals,
        }
        self._send({"op": "init", "mirror": mirror})
        return True

    async def engine_stopped(self) -> None:
        await self.close()

    def mirror_done(self) -> None:
        """The mirror's fix-up is over, and nothing else asks the worker
        anything at the end of a crawl (the downloader and the scraper
        closed before the crawl state): it is told to stop now, and exits
        while this process writes the mirror's index and closes the state,
        instead of after (close, on engine_stopped, then finds it gone)."""
        if self._process is None or self._closing is not None:
            return
        self._send({"op": "stop"})
        self._flush()  # now: the loop is not back before that work is done
        self._closing = asyncio.ensure_future(self._close(stop_sent=True))

    async def close(self) -> None:
        """Stop the worker once it has what was sent (everything was answered
        by now but the last state updates)."""
        if self._closing is None:
            if self._process is None:
                return
            self._closing = asyncio.ensure_future(self._close())
        await self._closing

    async def _close(self, stop_sent: bool = False) -> None:
        process = self._process
        if process is None:
            return
        if not stop_sent:
            self._send({"op": "stop"})
        self._process = None
        if not self._ready:  # still starting: nothing of it to wait for
            process.kill()
        for _ in range(2000):  # 10 s for the frames still waiting to go
            if not self._outbox or self._writer is None or self._failed:
                break
            await asyncio.sleep(0.005)
        if self._writer is not None:
            self._writer.close()  # after what is buffered
        elif process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        for _ in range(2000):  # 10 s
            if process.poll() is not None:
                break
            await asyncio.sleep(0.005)
        else:
            process.kill()
            process.wait()
        self._fail_all()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and not self._failed

    @property
    def ready(self) -> bool:
        """Running, and started: what is sent now is answered at once."""
        return self._ready and self.running

    def _send(self, header: dict[str, Any], body: bytes = b"") -> None:
        if not self.running:
            return
        head = frame_head(header, body)
        if len(body) <= JOIN_BELOW:
            self._outbox.append(head + body if body else head)
        else:
            self._outbox.append(head)
            self._outbox.append(body)
        # Written once the reactor is done with what it is doing: the frames
        # sent meanwhile (a page to read, another to store, the mirror's
        # index updates) go in one write. Each write is a system call and
        # wakes the worker; on small pages, one to three writes a page cost
        # more than the pages' bytes did.
        if not self._flush_soon and self._loop is not None:
            self._flush_soon = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write what waits in the outbox until the pipe is full (the
        transport then holds at most the rest of one frame): small frames
        joined, up to JOIN_BELOW bytes a write; large bodies as they are."""
        self._flush_soon = False
        writer, outbox = self._writer, self._outbox
        while outbox and writer is not None and not self._paused:
            data = outbox.popleft()
            if len(data) < JOIN_BELOW and outbox and len(outbox[0]) < JOIN_BELOW:
                parts, size = [data], len(data)
                while outbox and size < JOIN_BELOW and len(outbox[0]) < JOIN_BELOW:
                    parts.append(outbox.popleft())
                    size += len(parts[-1])
                data = b"".join(parts)
            writer.write(data)

    def answered(self, answer: dict[str, Any], body: bytes) -> None:
        if answer.get("id") == self._ready_id and "error" not in answer:
            self._ready = True
            return
        answers = self._answers
        future = answers.pop(answer.get("id") or 0, None)
        if future is not None and not future.done():
            future.set_result((answer, body))
            due = self._due
            while due and due[0][1] not in answers:
                due.popleft()  # answered (mostly in the order asked)
        elif "error" in answer:  # a message nobody waits for (init, index…)
            logger.warning("Page worker: %s", answer["error"])

    def lost(self, why: str) -> None:
        if self._process is not None and not self._failed:
            logger.warning("Page worker lost (%s): pages are read here now", why)
        self._failed = True
        self._fail_all()

    def _fail_all(self) -> None:
        self._outbox.clear()
        self._due.clear()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        answers, self._answers = self._answers, {}
        for future in answers.values():
            if not future.done():
                future.set_result(None)

    async def _ask(self, header: dict[str, Any], body: bytes = b"") -> Reply | None:
        """The worker's answer to ``header``, or None (no worker, or an
        error: the caller does the work itself)."""
        loop = self._loop
        if not self.running or loop is None:
            return None
        future: asyncio.Future[Reply | None] = loop.create_future()
        ident = header["id"]
        self._answers[ident] = future
        self._due.append((loop.time() + self.timeout, ident))
        if self._watch is None:
            self._watch = loop.call_at(self._due[0][0], self._overdue)
        self._send(header, body)
        reply = await future
        if reply is None or "error" in reply[0]:
            if reply is not None:
                logger.debug("Page worker: %s", reply[0]["error"])
            return None
        return reply

    def _overdue(self) -> None:
        """The timer of the oldest answer still awaited: the worker is stuck
        (or starved) if it is late, and the crawl must not wait for it."""
        self._watch = None
        loop, due, answers = self._loop, self._due, self._answers
        if loop is None:
            return
        while due and due[0][1] not in answers:
            due.popleft()  # answered
        if not due:
            return
        now = loop.time()
        if due[0][0] > now:
            self._watch = loop.call_at(due[0][0], self._overdue)
            return
        if now - due[0][0] > _LATE:
            # The timer itself is late: this process did not run (stopped
            # with Ctrl-Z or SIGSTOP, starved), and the worker most likely
            # with it. Each answer awaited gets a full timeout from now: a
            # worker that is really stuck is found then.
            later = now + self.timeout
            self._due = deque((max(when, later), ident) for when, ident in due)
            self._watch = loop.call_at(self._due[0][0], self._overdue)
            return
        self.lost(f"no answer in {self.timeout:g} s")
        if self._process is not None:
            with contextlib.suppress(OSError):
                self._process.kill()

    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)

    # -- work --------------------------------------------------------------------
    async def parse(
        self, response: Response, kind: str, keep: bool
    ) -> ParsedPage | None:
        """The page of ``response`` (``kind`` "html" or "css") as the worker
        read it; it keeps the page for the mirror when ``keep``. None: read
        it here."""
        ident = next(self._ids)
        assert isinstance(response, TextResponse)  # a page_kind
        encoding = given_encoding(response)
        header = {
            "op": "parse",
            "id": ident,
            "url": response.url,
            "encoding": encoding,
            "kind": kind,
            "keep": keep,
        }
        if encoding is None:
            # the worker works it out (Scrapy's way: webspider.page.encoding)
            content_type = response.headers.get(b"Content-Type") or b""
            header["content_type"] = content_type.decode("latin-1")
        self.reading += 1
        try:
            reply = await self._ask(header, response.body)
        finally:
            self.reading -= 1
        if reply is None:
            self._inc(f"{STATS_FALLBACK}/parse")
            return None
        answer = reply[0]
        if encoding is None:
            encoding = answer["encoding"]
            give_encoding(response, encoding)
        page = page_from_json(response.url, answer["page"])
        if answer["in_place"]:
            # offsets of link texts in these very bytes (read when asked)
            _, name, _ = scannable(b"", encoding)
            page.text_at = partial(link_text, response.body, name)
        if keep:
            self._held[response] = ident
            path = answer.get("path")
            if path is not None:
                path = tuple(path)
                planned = answer.get("planned")
                if planned is not None:
                    planned = path if planned is True else tuple(planned)
                self._paths[response] = path, answer.get("plain"), planned
        self._inc(STATS_PARSED)
        return page

    def read_here(self) -> None:
        """Count a page the crawl's process reads itself (see
        webspider.pageworker.readahead)."""
        self._inc(STATS_READ_HERE)

    def holds(self, response: Response) -> bool:
        return self.running and response in self._held

    def url_path(self, response: Response) -> Segments | None:
        """``response``'s mirror path as the worker worked it out when it
        read the page (webspider.mirror.paths.url_path), or None."""
        paths = self._paths.get(response)
        return paths[0] if paths is not None else None

    def plain_path(self, response: Response) -> str | None:
        """``"/".join(url_path(canonical_url(response.url)))`` as the worker
        worked it out when it read the page, or None."""
        paths = self._paths.get(response)
        return paths[1] if paths is not None else None

    def planned_path(self, response: Response) -> Segments | None:
        """``SafeTree.plan`` of ``url_path(response)``, as the worker's tree
        planned it when it read the page, or None."""
        paths = self._paths.get(response)
        return paths[2] if paths is not None else None

    def forget_plans(self) -> None:
        """The tree changed under a write of this process's: the worker's
        plans walk every folder again (SafeTree.forget_plans)."""
        self._send({"op": "forget_plans"})

    async def store(
        self, response: Response, entry: Entry, targets: TargetIndex | None
    ) -> tuple[Segments, Conversion | None, list[Any] | None] | None:
        """Have the worker convert (with ``targets``, where the files of the
        page's links are, when given) and write the page it holds for
        ``response`` at ``entry.path`` (webspider.mirror.writer's
        PageWriter): the path written and the conversion, or None (store it
        here). The worker answers ``used``, the conversion's ``count``/
        ``pending``/``kept`` (the kept links not in ``plain``)/``plain``/
        ``packed`` (``restore`` as the index record keeps it) and ``crc``,
        with the packed spans of the links the fix-up may change (when the
        page keeps some not in ``plain``) as bytes, and ``record``, the
        page's index record (``Entry.index_json``: the third item returned,
        the crawl's process stores it as it is; refused, and the worker
        taken as lost, when ``record_mismatch`` finds it does not describe
        the page); or ``refused``."""
        ident = self._held.pop(response, None)
        if ident is None:
            return None
        reply = await self._ask(
            {
                "op": "store",
                "id": ident,
                "key": entry.url,
                "path": entry.path,
                "kind": entry.kind,
                "targets": None
                if targets is None
                else self._targets(response, targets),
                # what the worker needs to make the page's index record
                # (worker.ENTRY_FIELDS, by position)
                "entry": (
                    entry.hash,
                    entry.size,
                    entry.run,
                    entry.content_type,
                    entry.encoding,
                    entry.etag,
                    entry.last_modified,
                ),
            }
        )
        if reply is None or reply[0].get("missing"):
            self._inc(f"{STATS_FALLBACK}/store")
            return None
        answer, spans_bytes = reply
        if "refused" in answer:
            self._inc(STATS_STORED)
            raise refusal_error(answer)
        record = answer.get("record")
        if record is not None:
            wrong = record_mismatch(record, entry)
            if wrong is not None:
                # written by the worker, but not recorded as it says: this
                # process stores the page itself, and every page from now on
                self.lost(f"its index record of {entry.url} {wrong}")
                self._inc(f"{STATS_FALLBACK}/store")
                return None
        self._inc(STATS_STORED)
        conversion = None
        if "count" in answer:
            # ``restore`` comes packed (the index record's form: all the
            # crawl keeps of it), as it is only when the store had no key
            packed = answer.get("packed")
            conversion = Conversion(
                b"",
                answer["count"],
                set(answer["pending"]),
                answer["kept"],
                answer.get("restore") or {},
                plain=answer.get("plain"),
                packed_restore=packed,
            )
            if spans_bytes:
                spans: array[int] = array("q")
                spans.frombytes(spans_bytes)
                conversion.packed_spans = answer["crc"], spans
        return tuple(answer["used"]), conversion, record

    def _targets(self, response: Response, targets: TargetIndex) -> dict[str, Any]:
        """``targets`` as JSON, the URLs the page links to (those the worker
        holds the page's keys of: ParsedPage.link_keys) named by their place
        among them ("at"), most of a small page's store message otherwise."""
        data = targets.to_json()
        page = parsed_page(response, self.crawler.spider)
        where = data["where"]
        if page is None or not where:
            return data
        place = {key: i for i, key in enumerate(page.link_keys())}
        at, rest = [], {}
        for url, value in where.items():
            i = place.get(url)
            if i is None:
                rest[url] = value
            else:
                at.append((i, value))
        data["where"], data["at"] = rest, at
        return data

    def forget(self, response: Response) -> None:
        ident = self._held.pop(response, None)
        if ident is not None:
            self._send({"op": "forget", "id": ident})

    async def fix_files(
        self, jobs: list[dict[str, Any]], targets: dict[str, Any]
    ) -> list[dict[str, Any]] | None:
        """Have the worker fix up the mirror files of ``jobs`` at the end of
        the crawl (webspider.mirror.fixup.FileFixer): one answer a job, or
        None (the fix-up does them itself)."""
        reply = await self._ask(
            {"op": "fixup", "id": next(self._ids), "jobs": jobs, "targets": targets}
        )
        if reply is None or not isinstance(reply[0].get("fixed"), list):
            self._inc(f"{STATS_FALLBACK}/fixup")
            return None
        fixed: list[dict[str, Any]] = reply[0]["fixed"]
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS_FIXED_UP, len(fixed))
        return fixed
