"""The Scrapy internals webspider relies on, in one place, checked at start-up.

A few things webspider does have no public Scrapy API: the depth barrier
needs the requests still in progress, the politeness middleware must hold and
restart a download slot, the downloader must count a request as transferring
as soon as it leaves its slot's queue. They reach into Scrapy's private state;
this module is the only place that does, through the accessors below, and
``INTERNALS`` lists every internal so relied on, with what for.

If a Scrapy upgrade renames or drops one, a guarded lookup would quietly turn
a feature off (the depth barrier would open, a Retry-After pause would never
end); instead ``check_internals()`` runs once before the crawl starts (the
``crawl`` command, and ``WebSpider.from_crawler`` for in-process crawls) and
refuses with one line naming the internal and the Scrapy version.
``tests/test_internals.py`` has one test per internal, for its shape.

Ground floor: imports Scrapy and the standard library only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import dis
import importlib
import inspect
import sys
from dataclasses import dataclass
from functools import cache
from time import monotonic
from typing import TYPE_CHECKING, Any

import scrapy

if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Iterable, Iterator, Sequence, Set
    from types import FrameType, ModuleType

    from scrapy import Request, Spider
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.core.engine import ExecutionEngine, _Slot
    from scrapy.http import Response, TextResponse
    from scrapy.middleware import MiddlewareManager
    from scrapy.utils.asyncio import CallLaterResult
    from twisted.internet.defer import Deferred

#: an attribute of the instances (set in ``__init__``, or a class-level name)
ATTRIBUTE = "attribute"
#: a method webspider calls
METHOD = "method"
#: a method a webspider subclass overrides (and calls through ``super()``)
OVERRIDE = "override"


@dataclass(frozen=True)
class Internal:
    """One Scrapy internal webspider relies on."""

    #: the Scrapy class, as ``module:QualName``
    owner: str
    #: the attribute or method
    name: str
    #: ATTRIBUTE, METHOD or OVERRIDE
    kind: str
    #: what webspider needs it for (one clause, shown in the error)
    why: str
    #: the webspider modules that use it
    used_in: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.owner.partition(':')[2]}.{self.name}"


_ENGINE = "scrapy.core.engine:ExecutionEngine"
_ENGINE_SLOT = "scrapy.core.engine:_Slot"
_DOWNLOADER = "scrapy.core.downloader:Downloader"
_DOWNLOAD_SLOT = "scrapy.core.downloader:Slot"
_DOWNLOADER_MW = "scrapy.core.downloader.middleware:DownloaderMiddlewareManager"
_MW_MANAGER = "scrapy.middleware:MiddlewareManager"

#: Every Scrapy internal webspider relies on. A new use of a Scrapy private
#: gets a row here, an accessor below and a test in tests/test_internals.py.
INTERNALS: tuple[Internal, ...] = (
    Internal(
        owner=_ENGINE,
        name="_slot",
        kind=ATTRIBUTE,
        why="the depth barrier and the politeness middleware read the crawl's "
        "state there",
        used_in=(
            "frontier/scheduler.py",
            "politeness/middleware.py",
            "politeness/waiting.py",
        ),
    ),
    Internal(
        owner=_ENGINE_SLOT,
        name="inprogress",
        kind=ATTRIBUTE,
        why="the depth barrier waits for shallower requests still downloading "
        "or being parsed, and a body is held in memory until its request leaves",
        used_in=("frontier/scheduler.py", "bounds/memory.py"),
    ),
    Internal(
        owner=_ENGINE_SLOT,
        name="closing",
        kind=ATTRIBUTE,
        why="requests waiting for a Crawl-delay turn are dropped when the crawl closes",
        used_in=("politeness/middleware.py",),
    ),
    Internal(
        owner=_ENGINE_SLOT,
        name="nextcall",
        kind=ATTRIBUTE,
        why="the waiting room wakes the engine when it makes room, a Redis "
        "worker when another worker may have opened a level, a new round "
        "when it begins",
        used_in=(
            "politeness/waiting.py",
            "frontier/sharedtimers.py",
            "frontier/rounds.py",
        ),
    ),
    Internal(
        owner=_DOWNLOADER,
        name="total_concurrency",
        kind=ATTRIBUTE,
        why="a request in the waiting room holds no place in CONCURRENT_REQUESTS",
        used_in=("politeness/waiting.py",),
    ),
    Internal(
        owner=_DOWNLOADER,
        name="_get_slot",
        kind=OVERRIDE,
        why="webspider's Downloader overrides it to keep "
        "CONCURRENT_REQUESTS_PER_DOMAIN",
        used_in=("politeness/downloader.py",),
    ),
    Internal(
        owner=_DOWNLOADER,
        name="_process_queue",
        kind=METHOD,
        why="a download slot is restarted after a Retry-After pause",
        used_in=("politeness/middleware.py",),
    ),
    Internal(
        owner=_DOWNLOAD_SLOT,
        name="queue",
        kind=ATTRIBUTE,
        why="a request counts as transferring as soon as it leaves it",
        used_in=("politeness/downloader.py",),
    ),
    Internal(
        owner=_DOWNLOAD_SLOT,
        name="transferring",
        kind=ATTRIBUTE,
        why="per-host concurrency and the progress line's in-flight count",
        used_in=("politeness/downloader.py", "reports/progressline.py"),
    ),
    Internal(
        owner=_DOWNLOAD_SLOT,
        name="latercall",
        kind=ATTRIBUTE,
        why="a Retry-After pause holds the download slot",
        used_in=("politeness/middleware.py",),
    ),
    Internal(
        owner=_DOWNLOAD_SLOT,
        name="lastseen",
        kind=ATTRIBUTE,
        why="a Crawl-delay counts from robots.txt's answer, not from its request",
        used_in=("politeness/middleware.py",),
    ),
    Internal(
        owner="scrapy.http.response.text:TextResponse",
        name="_encoding",
        kind=ATTRIBUTE,
        why="the page worker works a page's encoding out off the crawl's core "
        "and the response is given it",
        used_in=("pageworker/client.py",),
    ),
    Internal(
        owner=_DOWNLOADER_MW,
        name="_process_request",
        kind=OVERRIDE,
        why="webspider's chain awaits only what a middleware returned that is "
        "awaitable",
        used_in=("downloadermw.py",),
    ),
    Internal(
        owner=_DOWNLOADER_MW,
        name="_process_response",
        kind=OVERRIDE,
        why="webspider's chain awaits only what a middleware returned that is "
        "awaitable",
        used_in=("downloadermw.py",),
    ),
    Internal(
        owner=_MW_MANAGER,
        name="_mw_methods_requiring_spider",
        kind=ATTRIBUTE,
        why="webspider's downloader middleware chain passes the spider to the "
        "methods that still require it, as Scrapy's does",
        used_in=("downloadermw.py",),
    ),
    Internal(
        owner=_MW_MANAGER,
        name="_spider",
        kind=ATTRIBUTE,
        why="the spider those methods are given",
        used_in=("downloadermw.py",),
    ),
    Internal(
        owner="scrapy.commands:BaseRunSpiderCommand",
        name="_create_crawler",
        kind=OVERRIDE,
        why="the crawl command overrides it to keep the crawler for its exit "
        "status and to leave switched-off components out",
        used_in=("commands/crawl.py",),
    ),
)


class ScrapyInternalsError(RuntimeError):
    """The installed Scrapy lacks an internal webspider relies on; the
    message is one line naming it and the Scrapy version."""


# -- the check --------------------------------------------------------------------
def check_internals(internals: Sequence[Internal] | None = None) -> None:
    """Raise ScrapyInternalsError when the installed Scrapy lacks one of
    ``internals`` (by default INTERNALS, checked once per process)."""
    if internals is None:
        missing = _installed_missing()
    else:
        missing = missing_internals(internals)
    if missing:
        raise ScrapyInternalsError(internals_message(missing))


def missing_internals(internals: Iterable[Internal]) -> tuple[Internal, ...]:
    """The internals the installed Scrapy does not have."""
    return tuple(internal for internal in internals if not _exists(internal))


def internals_message(missing: Sequence[Internal]) -> str:
    """``webspider needs Scrapy's X (why), which Scrapy 2.x.y does not have``."""
    named = [f"{internal.label} ({internal.why})" for internal in missing]
    needs = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return (
        f"webspider needs Scrapy's {needs}, which Scrapy {scrapy.__version__} "
        "does not have"
    )


@cache
def _installed_missing() -> tuple[Internal, ...]:
    # Scrapy does not change under a running process: one check is enough
    # (the crawl command checks, then WebSpider.from_crawler asks again).
    return missing_internals(INTERNALS)


def _exists(internal: Internal) -> bool:
    owner = _resolve(internal.owner)
    if owner is None:
        return False
    if internal.kind == ATTRIBUTE:
        return _has_attribute(owner, internal.name)
    return callable(getattr(owner, internal.name, None))


def _resolve(path: str) -> type | None:
    module_name, _, qualname = path.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError:
        return None
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) else None


def _has_attribute(owner: type, name: str) -> bool:
    # Instance attributes are checked without building an instance: an
    # ExecutionEngine needs a crawler and builds a downloader with its
    # handlers, too much for every start. What Scrapy's own __init__ assigns
    # to self is read off its bytecode instead (there even where the source
    # is not installed): a few milliseconds for the whole table.
    if any(name in vars(klass) for klass in owner.__mro__):
        return True  # a class attribute, property or __slots__ member
    if dataclasses.is_dataclass(owner) and any(
        field.name == name for field in dataclasses.fields(owner)
    ):
        return True
    return any(name in _init_assigns(klass) for klass in owner.__mro__)


def _init_assigns(klass: type) -> set[str]:
    """Names ``klass.__init__`` assigns as ``self.<name> = …``."""
    init = vars(klass).get("__init__")
    code = getattr(inspect.unwrap(init), "__code__", None) if init else None
    if code is None or not code.co_varnames:
        return set()
    self_name = code.co_varnames[0]
    assigned: set[str] = set()
    previous: dis.Instruction | None = None
    for instruction in dis.get_instructions(code):
        if (
            instruction.opname == "STORE_ATTR"
            and previous is not None
            and previous.opname.startswith("LOAD_FAST")
            # LOAD_FAST self; or LOAD_FAST_LOAD_FAST (value, self) on 3.13+
            and self_name in (previous.argval, *_last(previous.argval))
        ):
            assigned.add(instruction.argval)
        previous = instruction
    return assigned


def _last(argval: object) -> tuple[object, ...]:
    return (argval[-1],) if isinstance(argval, tuple) and argval else ()


# -- the accessors ------------------------------------------------------------------
# Each is the only use of its internal outside the table; the comment says why
# no public API does.


def engine_slot(engine: ExecutionEngine | None) -> _Slot | None:
    # The engine's state while a spider is open (None before and after); the
    # public ExecutionEngine has no view of requests in progress or closing.
    return engine._slot if engine is not None else None


def requests_in_progress(engine: ExecutionEngine | None) -> Set[Request]:
    # From download start until everything the page's callback yielded is
    # scheduled: exactly what the depth barrier must wait for, and how long a
    # response's body is held. The scraper's public counts forget a request
    # once its response is handed over.
    slot = engine_slot(engine)
    return slot.inprogress if slot is not None else frozenset()


def given_encoding(response: TextResponse) -> str | None:
    # The encoding the response was made with (``encoding=``); None: Scrapy
    # works it out from the bytes (a scan of the body for a <meta charset>,
    # at worst a decode) on every read of ``encoding`` that misses its
    # memos. No public view tells the two apart.
    return response._encoding


def give_encoding(response: TextResponse, encoding: str) -> None:
    # ``encoding`` as if the response had been made with it: Scrapy's own
    # answer for its bytes, worked out elsewhere (webspider.page.encoding,
    # in the page worker). ``encoding``, ``text`` and ``replace`` then use it
    # as they would have used what they work out.
    response._encoding = encoding


def methods_requiring_spider(manager: MiddlewareManager) -> Set[Any]:
    """The methods of ``manager``'s middlewares that are given the spider
    (they require it; deprecated)."""
    return manager._mw_methods_requiring_spider


def manager_spider(manager: MiddlewareManager) -> Spider | None:
    """The spider ``manager`` gives those methods."""
    return manager._spider


def engine_closing(engine: ExecutionEngine | None) -> bool:
    # Scrapy sends no signal when the engine starts closing (spider_closed
    # comes after every request in progress has finished); its slot's
    # ``closing`` Deferred is set at that moment.
    slot = engine_slot(engine)
    return slot is not None and slot.closing is not None


def wake_engine(engine: ExecutionEngine | None) -> None:
    # The engine takes more requests from the scheduler when one finishes or
    # every 5 s; a place made in the downloader is neither.
    slot = engine_slot(engine)
    if slot is not None:
        slot.nextcall.schedule()


def total_concurrency(downloader: Downloader) -> int:
    # CONCURRENT_REQUESTS as the downloader enforces it (needs_backout reads
    # it); 0 means no limit.
    return downloader.total_concurrency


def add_total_concurrency(downloader: Downloader, places: int) -> None:
    # Raising the limit while a request waits is the only way to let it wait
    # inside the downloader without holding a place there.
    downloader.total_concurrency += places


def process_slot_queue(downloader: Downloader, slot: Slot) -> None:
    # The downloader looks at a slot's queue only when a request comes or
    # goes (or its own delay timer fires); after a pause neither happens.
    downloader._process_queue(slot)


def slot_queue(slot: Slot) -> deque[tuple[Request, Deferred[Response]]]:
    # The requests waiting in a download slot for a free transfer place.
    return slot.queue


def set_slot_queue(
    slot: Slot, queue: deque[tuple[Request, Deferred[Response]]]
) -> None:
    # Replaced by a queue that reserves a transfer place as it hands out a
    # request (webspider.politeness.downloader): Scrapy counts it only once
    # the download task runs, too late for a burst.
    slot.queue = queue


def slot_transferring(slot: Slot) -> set[Request]:
    # The requests of a slot on the wire; free_transfer_slots() is the only
    # public reading, and it gives places left, not requests.
    return slot.transferring


def slot_latercall(slot: Slot) -> CallLaterResult | None:
    # While set, the downloader starts no request of the slot: Scrapy's own
    # DOWNLOAD_DELAY timer, or webspider's Retry-After hold.
    return slot.latercall


def start_slot_delay_now(slot: Slot) -> None:
    # The slot's delay runs from its last request's start (Scrapy's clock,
    # time.monotonic); from now on instead, if that is later.
    slot.lastseen = max(slot.lastseen, monotonic())


def set_slot_latercall(slot: Slot, call: CallLaterResult | None) -> None:
    slot.latercall = call


# -- start-up: Scrapy's TLS aliases without inspect.stack() --------------------------
#: the module Scrapy's deprecated TLS aliases are built in, and the module
#: that builds them (importing it imports scrapy.core.downloader.tls too)
DEPRECATE_MODULE = "scrapy.utils.deprecate"
TLS_ALIASES_MODULE = "scrapy.core.downloader.contextfactory"


class _FramesOnDemand:
    """``inspect.stack()``'s list as scrapy.utils.deprecate reads it: each
    record made when it is read, without its source lines.

    ``create_deprecated_class`` takes ``inspect.stack()[1]`` (its caller's
    frame) and looks up that frame's module, for the new class's
    ``__module__``. ``inspect.stack()`` reads the source lines of every
    frame on the stack first (an alias is built while its module is
    imported, forty-odd frames deep), and reading a line, or looking a frame's
    module up, makes ``inspect`` map every module imported so far to its
    file once (0.05 s with Scrapy's 850): together 0.1 s of every crawl's
    start for three aliases. A record here has the frame, file, line and
    function ``inspect.stack()`` gives, and no source lines (``code_context``
    and ``index`` None, as ``inspect.stack(0)`` gives them); Scrapy reads only
    the frame."""

    def __init__(self, frame: FrameType) -> None:
        self._frame = frame

    def __getitem__(self, index: int) -> inspect.FrameInfo:
        if index < 0:
            return inspect.getouterframes(self._frame, 0)[index]
        frame: FrameType | None = self._frame
        for _ in range(index):
            frame = frame.f_back if frame is not None else None
        if frame is None:
            raise IndexError("stack index out of range")
        info = inspect.getframeinfo(frame, 0)
        return inspect.FrameInfo(frame, *info, positions=info.positions)

    def __len__(self) -> int:
        return len(inspect.getouterframes(self._frame, 0))


class _InspectOnDemand:
    """The ``inspect`` module as scrapy.utils.deprecate sees it: ``stack()``
    gives its records on demand, and ``getmodule()`` finds a module's own
    frame by the module's name instead of mapping every module to its file."""

    def __getattr__(self, name: str) -> Any:
        return getattr(inspect, name)

    @staticmethod
    def stack(context: int = 1) -> _FramesOnDemand:
        return _FramesOnDemand(sys._getframe(1))

    @staticmethod
    def getmodule(obj: object, _filename: str | None = None) -> ModuleType | None:
        if inspect.isframe(obj) and _filename is None:
            module = sys.modules.get(obj.f_globals.get("__name__", ""))
            # the module whose file the frame runs: what inspect's mapping
            # of files to modules would have found
            if getattr(module, "__file__", None) == obj.f_code.co_filename:
                return module
        return inspect.getmodule(obj, _filename)


@contextlib.contextmanager
def _stack_on_demand(deprecate: ModuleType) -> Iterator[None]:
    # Only scrapy.utils.deprecate's own name ``inspect`` changes, and only
    # meanwhile: the standard library and every other module keep theirs.
    real = vars(deprecate).get("inspect")
    if real is not inspect:  # Scrapy no longer looks it up there
        yield
        return
    deprecate.inspect = _InspectOnDemand()  # type: ignore[attr-defined]
    try:
        yield
    finally:
        deprecate.inspect = real  # type: ignore[attr-defined]


def import_tls_aliases() -> None:
    """Import Scrapy's TLS context factory modules (every crawl does: the
    HTTP/1.1 download handler imports them) with the deprecated aliases
    they define built without ``inspect.stack()``'s reading of every frame's
    source: the same classes, ``__module__`` and warnings
    (tests/test_internals.py compares them with a plain import's)."""
    if TLS_ALIASES_MODULE in sys.modules:
        return
    deprecate = importlib.import_module(DEPRECATE_MODULE)
    with _stack_on_demand(deprecate):
        importlib.import_module(TLS_ALIASES_MODULE)
