"""The Scrapy internals webspider relies on (webspider.internals).

One test per internal, on the installed Scrapy: it is there and behaves as
webspider's accessor assumes, so a Scrapy upgrade that breaks one fails a
test named after it. Then the check itself, against stand-in classes that
lack an internal, and end to end: real Scrapy with one internal deleted
(a sitecustomize shim) refuses to crawl with one line and exit status 2.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from time import monotonic
from typing import Any

import pytest
import scrapy
from scrapy import Request, Spider
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.core.downloader import Downloader as ScrapyDownloader
from scrapy.core.downloader import Slot
from scrapy.core.engine import ExecutionEngine, _Slot
from scrapy.crawler import CrawlerRunner
from scrapy.http import TextResponse
from scrapy.settings import Settings
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import deferred_f_from_coro_f, maybe_deferred_to_future
from scrapy.utils.reactor import CallLaterOnce
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from tests.support.cli import ROOT, scrapy_command, scrapy_env
from webspider.commands.crawl import Command
from webspider.internals import (
    ATTRIBUTE,
    INTERNALS,
    METHOD,
    OVERRIDE,
    Internal,
    ScrapyInternalsError,
    _InspectOnDemand,
    add_total_concurrency,
    check_internals,
    engine_closing,
    engine_slot,
    give_encoding,
    given_encoding,
    internals_message,
    missing_internals,
    process_slot_queue,
    requests_in_progress,
    set_slot_latercall,
    set_slot_queue,
    slot_latercall,
    slot_queue,
    slot_transferring,
    start_slot_delay_now,
    total_concurrency,
    wake_engine,
)
from webspider.politeness.downloader import Downloader, ReservingQueue
from webspider.spiders.webspider import WebSpider

#: label of an internal → its shape test (filled by @shape_of)
SHAPE_TESTS: dict[str, Callable[..., Any]] = {}


def shape_of(label: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(test: Callable[..., Any]) -> Callable[..., Any]:
        SHAPE_TESTS[label] = test
        return test

    return register


def internal(label: str) -> Internal:
    return next(i for i in INTERNALS if i.label == label)


def names_in(function: Any) -> tuple[str, ...]:
    """Attribute and global names the (undecorated) function's code uses."""
    return inspect.unwrap(function).__code__.co_names


# -- the table --------------------------------------------------------------------
@pytest.mark.parametrize("row", INTERNALS, ids=lambda row: row.label)
def test_the_installed_scrapy_has_it(row):
    assert missing_internals([row]) == ()


def test_every_internal_has_a_test_of_its_shape():
    assert set(SHAPE_TESTS) == {row.label for row in INTERNALS}


def test_the_table_reads_as_one_line_each():
    labels = [row.label for row in INTERNALS]
    assert len(labels) == len(set(labels))
    for row in INTERNALS:
        assert row.kind in (ATTRIBUTE, METHOD, OVERRIDE)
        assert "\n" not in row.why
        assert row.why == row.why.strip()
        assert not row.why.endswith(".")
        for module in row.used_in:
            assert (ROOT / "webspider" / module).is_file(), module


def test_the_readme_lists_every_internal():
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme.split("### Scrapy internals webspider relies on", 1)[1]
    section = section.split("\n## ", 1)[0]
    for row in INTERNALS:
        assert f"| `{row.label}`" in section, row.label


def test_the_installed_scrapy_passes_the_start_up_check():
    check_internals()
    check_internals()  # cached: Scrapy does not change under a process


# -- one test per internal: the shape the accessors rely on ------------------------
def engine_with_slot(nextcall: CallLaterOnce[Any] | None = None):
    """A real engine with the real slot it has while a spider is open."""
    engine = ExecutionEngine(get_crawler(WebSpider), lambda _: None)
    slot = _Slot(
        close_if_idle=True,
        nextcall=nextcall or CallLaterOnce(lambda: None),
        scheduler=None,  # type: ignore[arg-type]
    )
    return engine, slot


@shape_of("ExecutionEngine._slot")
def test_engine_slot_is_the_open_spiders_state():
    engine, slot = engine_with_slot()
    try:
        # None until a spider is opened: the accessors say "nothing"
        assert engine_slot(engine) is None
        assert engine_slot(None) is None
        assert not requests_in_progress(engine)
        assert not engine_closing(engine)
        wake_engine(engine)
        # opening the spider makes a _Slot, closing it drops it
        assert {"_slot", "_Slot"} <= set(names_in(ExecutionEngine.open_spider_async))
        assert "_slot" in names_in(ExecutionEngine.close_spider_async)
        engine._slot = slot
        assert engine_slot(engine) is slot
    finally:
        engine.downloader.close()


@shape_of("_Slot.inprogress")
def test_engine_slot_keeps_the_requests_in_progress():
    engine, slot = engine_with_slot()
    try:
        engine._slot = slot
        request = Request("http://a.test/")
        # the engine adds a request when its download starts …
        assert "add_request" in names_in(ExecutionEngine._download)
        slot.add_request(request)
        assert request in requests_in_progress(engine)
        # … and removes it once its callback output is handled
        assert "_handle_downloader_output" in names_in(
            ExecutionEngine._start_scheduled_request
        )
        slot.remove_request(request)
        assert request not in requests_in_progress(engine)
    finally:
        engine.downloader.close()


@shape_of("_Slot.closing")
def test_engine_slot_closing_is_set_when_the_engine_starts_closing():
    engine, slot = engine_with_slot()
    try:
        engine._slot = slot
        assert "close" in names_in(ExecutionEngine.close_spider_async)
        request = Request("http://a.test/")
        slot.add_request(request)
        closing = slot.close()
        closing.send(None)  # runs up to waiting for the request in progress
        assert engine_closing(engine)
        closing.close()
    finally:
        engine.downloader.close()


@shape_of("_Slot.nextcall")
@deferred_f_from_coro_f
async def test_waking_the_engine_runs_its_next_call():
    called: Deferred[None] = Deferred()
    engine, slot = engine_with_slot(CallLaterOnce(called.callback, None))
    try:
        # the next call is what takes requests from the scheduler
        assert "_start_scheduled_requests" in names_in(
            ExecutionEngine.open_spider_async
        )
        engine._slot = slot
        wake_engine(engine)
        await maybe_deferred_to_future(called)
    finally:
        engine.downloader.close()


def scrapy_downloader(settings: dict[str, Any] | None = None) -> ScrapyDownloader:
    return ScrapyDownloader(get_crawler(Spider, settings))


@shape_of("Downloader.total_concurrency")
def test_total_concurrency_is_the_limit_the_downloader_backs_out_at():
    downloader = scrapy_downloader({"CONCURRENT_REQUESTS": 2})
    try:
        assert total_concurrency(downloader) == 2
        downloader.active.update(
            {Request("http://a.test/1"), Request("http://a.test/2")}
        )
        assert downloader.needs_backout()
        add_total_concurrency(downloader, 1)
        assert total_concurrency(downloader) == 3
        assert not downloader.needs_backout()
        add_total_concurrency(downloader, -1)
        assert downloader.needs_backout()
    finally:
        downloader.close()


@shape_of("Downloader._get_slot")
def test_the_downloader_gets_a_requests_slot_through_get_slot():
    # Scrapy's downloader finds a request's slot through _get_slot, so
    # webspider's override sees every slot before a request is queued in it.
    assert "_get_slot" in names_in(ScrapyDownloader._enqueue_request)
    downloader = Downloader(get_crawler(Spider))
    try:
        key, slot = downloader._get_slot(Request("http://a.test/x"))
        assert key == "a.test"
        assert isinstance(slot, Slot)
        assert isinstance(slot_queue(slot), ReservingQueue)
        queue = slot_queue(slot)
        assert downloader._get_slot(Request("http://a.test/y")) == ("a.test", slot)
        assert slot_queue(slot) is queue  # wrapped once
    finally:
        downloader.close()


@shape_of("Downloader._process_queue")
def test_processing_a_slots_queue_applies_its_delay():
    downloader = scrapy_downloader()
    slot = Slot(concurrency=1, delay=60.0, jitter=0.0)
    try:
        slot.lastseen = monotonic()
        slot_queue(slot).append((Request("http://a.test/"), Deferred()))
        process_slot_queue(downloader, slot)
        # too soon after the last request: a timer instead of a download
        assert slot_latercall(slot) is not None
        assert len(slot_queue(slot)) == 1
    finally:
        slot.close()
        downloader.close()


@shape_of("Slot.queue")
def test_a_slots_queue_is_a_deque_taken_from_the_left():
    slot = Slot(concurrency=1, delay=0.0, jitter=0.0)
    assert isinstance(slot_queue(slot), deque)
    assert "append" in names_in(ScrapyDownloader._enqueue_request)
    assert "popleft" in names_in(ScrapyDownloader._process_queue)
    reserving = ReservingQueue(slot_transferring(slot), slot_queue(slot))
    set_slot_queue(slot, reserving)
    assert slot_queue(slot) is reserving


@shape_of("Slot.transferring")
def test_a_slots_transferring_requests_take_its_places():
    slot = Slot(concurrency=2, delay=0.0, jitter=0.0)
    assert slot.free_transfer_slots() == 2
    slot_transferring(slot).add(Request("http://a.test/"))
    assert slot.free_transfer_slots() == 1
    assert "transferring" in names_in(ScrapyDownloader._download)


@shape_of("Slot.latercall")
def test_a_slot_with_a_latercall_starts_nothing():
    downloader = scrapy_downloader()
    slot = Slot(concurrency=1, delay=0.0, jitter=0.0)
    hold = call_later(3600, lambda: None)
    try:
        assert slot_latercall(slot) is None
        set_slot_latercall(slot, hold)
        slot_queue(slot).append((Request("http://a.test/"), Deferred()))
        process_slot_queue(downloader, slot)
        assert len(slot_queue(slot)) == 1  # held, not started
        assert slot_latercall(slot) is hold
        # Scrapy's own timer clears it before processing the queue again
        assert "latercall" in names_in(ScrapyDownloader._latercall)
    finally:
        hold.cancel()
        set_slot_latercall(slot, None)
        downloader.close()


@shape_of("Slot.lastseen")
def test_a_slots_delay_runs_from_its_lastseen():
    downloader = scrapy_downloader()
    slot = Slot(concurrency=1, delay=60.0, jitter=0.0)
    try:
        assert slot.lastseen == 0  # a new slot: its first request goes at once
        start_slot_delay_now(slot)
        assert 0 < monotonic() - slot.lastseen < 1
        slot_queue(slot).append((Request("http://a.test/"), Deferred()))
        process_slot_queue(downloader, slot)
        assert slot_latercall(slot) is not None  # held for the delay from now
        assert len(slot_queue(slot)) == 1
        later = slot.lastseen + 5
        slot.lastseen = later
        start_slot_delay_now(slot)
        assert slot.lastseen == later  # never moved back
    finally:
        slot.close()
        downloader.close()


@shape_of("TextResponse._encoding")
def test_a_response_given_an_encoding_reads_as_made_with_it():
    body = '<meta charset="koi8-r"><p>\xe9</p>'.encode("cp1252")
    made = TextResponse("http://a.test/", body=body, encoding="cp1252")
    assert given_encoding(made) == "cp1252"
    plain = TextResponse("http://a.test/", body=body)
    assert given_encoding(plain) is None
    assert plain.encoding == "koi8-r"  # worked out from the bytes
    given = TextResponse("http://a.test/", body=body)
    give_encoding(given, "cp1252")
    assert given.encoding == "cp1252"
    assert given.text == made.text == '<meta charset="koi8-r"><p>\xe9</p>'
    assert given.replace(url="http://b.test/").encoding == "cp1252"


@shape_of("BaseRunSpiderCommand._create_crawler")
def test_the_crawl_command_creates_its_crawler_through_create_crawler():
    assert "_create_crawler" in names_in(ScrapyCrawlCommand.run)
    settings = Settings({"TELNETCONSOLE_ENABLED": False})
    command = Command()
    command.settings = settings
    command.crawler_process = CrawlerRunner(settings)
    crawler = command._create_crawler(WebSpider)
    assert command.crawler is crawler
    assert crawler.spidercls is WebSpider


# -- the check, against stand-ins that lack an internal ------------------------------
class EngineWithSlot:
    def __init__(self) -> None:
        self._slot: object = None


class EngineWithoutSlot:
    def __init__(self, other: EngineWithSlot) -> None:
        self.slot = None
        other._slot = None  # another object's attribute does not count


class EngineWithSlotAnnotation:
    _slot: object = None


@dataclass
class SlotFields:
    queue: deque[Any] = field(default_factory=deque)


class DownloaderWithoutProcessQueue:
    def process_queue(self) -> None:
        pass


def stand_in(owner: str, name: str, kind: str = ATTRIBUTE) -> Internal:
    return Internal(
        owner=f"tests.test_internals:{owner}",
        name=name,
        kind=kind,
        why=f"stand-in for {name}",
        used_in=(),
    )


@pytest.mark.parametrize(
    ("owner", "name", "kind"),
    [
        ("EngineWithSlot", "_slot", ATTRIBUTE),
        ("EngineWithSlotAnnotation", "_slot", ATTRIBUTE),
        ("SlotFields", "queue", ATTRIBUTE),
        ("DownloaderWithoutProcessQueue", "process_queue", METHOD),
        ("DownloaderWithoutProcessQueue", "process_queue", OVERRIDE),
    ],
)
def test_a_stand_in_that_has_it_passes(owner, name, kind):
    check_internals([stand_in(owner, name, kind)])


@pytest.mark.parametrize(
    ("owner", "name", "kind"),
    [
        ("EngineWithoutSlot", "_slot", ATTRIBUTE),
        ("DownloaderWithoutProcessQueue", "_process_queue", METHOD),
        ("DownloaderWithoutProcessQueue", "_get_slot", OVERRIDE),
        ("SlotFields", "latercall", ATTRIBUTE),
        ("NoSuchClass", "_slot", ATTRIBUTE),
    ],
)
def test_a_missing_internal_is_one_line_naming_it_and_the_scrapy_version(
    owner, name, kind
):
    with pytest.raises(ScrapyInternalsError) as raised:
        check_internals(
            [stand_in("EngineWithSlot", "_slot"), stand_in(owner, name, kind)]
        )
    assert str(raised.value) == (
        f"webspider needs Scrapy's {owner}.{name} (stand-in for {name}), "
        f"which Scrapy {scrapy.__version__} does not have"
    )


def test_a_missing_module_is_a_missing_internal():
    missing = Internal(
        owner="scrapy.no_such_module:ExecutionEngine",
        name="_slot",
        kind=ATTRIBUTE,
        why="gone",
        used_in=(),
    )
    assert missing_internals([missing]) == (missing,)


def test_several_missing_internals_are_still_one_line():
    rows = [
        stand_in("EngineWithoutSlot", "_slot"),
        stand_in("SlotFields", "latercall"),
        stand_in("DownloaderWithoutProcessQueue", "_process_queue", METHOD),
    ]
    message = internals_message(missing_internals(rows))
    assert "\n" not in message
    assert message == (
        "webspider needs Scrapy's EngineWithoutSlot._slot (stand-in for _slot), "
        "SlotFields.latercall (stand-in for latercall) and "
        "DownloaderWithoutProcessQueue._process_queue (stand-in for _process_queue), "
        f"which Scrapy {scrapy.__version__} does not have"
    )


# -- end to end: real Scrapy with one internal deleted --------------------------------
#: what the shim deletes → the internals it takes away
REMOVALS = {
    "method": (
        "import scrapy.core.downloader\n"
        "del scrapy.core.downloader.Downloader._process_queue\n",
        ["Downloader._process_queue"],
    ),
    "class": (
        "import scrapy.core.engine\ndel scrapy.core.engine._Slot\n",
        ["_Slot.inprogress", "_Slot.closing", "_Slot.nextcall"],
    ),
}


def shim_env(tmp_path, removal: str) -> dict[str, str]:
    """The environment of a Python whose Scrapy lacks ``removal``: a
    sitecustomize module deletes it before anything else runs."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(REMOVALS[removal][0], "utf-8")
    env = scrapy_env()
    env["PYTHONPATH"] = f"{shim}:{env['PYTHONPATH']}"
    return env


def expected_line(removal: str) -> str:
    return internals_message([internal(label) for label in REMOVALS[removal][1]])


@pytest.mark.parametrize("removal", sorted(REMOVALS))
def test_scrapy_crawl_refuses_a_scrapy_without_an_internal(tmp_path, removal):
    out = tmp_path / "out"
    proc = subprocess.run(
        scrapy_command("-a", "start_urls=http://site.test:9/", "-a", f"output={out}"),
        cwd=ROOT,
        env=shim_env(tmp_path, removal),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"webspider: error: {expected_line(removal)}\n"
    assert proc.stdout == ""
    assert not out.exists()  # nothing written


IN_PROCESS = """
import sys

from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings

from webspider.spiders.webspider import WebSpider

settings = Settings()
settings.setmodule("webspider.settings", priority="project")
settings.set("LOG_ENABLED", False)
process = CrawlerProcess(settings, install_root_handler=False)
crawl = process.crawl(WebSpider, start_urls="http://site.test:9/", output=sys.argv[1])
crawl.addErrback(lambda failure: print(f"{failure.type.__name__}: {failure.value}"))
process.start()
"""


def test_an_in_process_crawl_refuses_when_the_spider_is_built(tmp_path):
    script = tmp_path / "crawl.py"
    script.write_text(IN_PROCESS, "utf-8")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(script), str(out)],
        cwd=tmp_path,
        env=shim_env(tmp_path, "method"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.stdout == f"ScrapyInternalsError: {expected_line('method')}\n", (
        proc.stderr[-2000:]
    )
    assert not out.exists()


# -- start-up: Scrapy's TLS aliases without inspect.stack() --------------------------
#: run in a fresh Python: imports Scrapy's TLS aliases plainly or through
#: import_tls_aliases (argv[1]), a few calls deep as in a crawl, and prints
#: what Scrapy ended up with, and how often inspect.stack()'s per-frame work ran
TLS_ALIASES = """
import inspect
import json
import sys
import warnings

calls = []
real_getouterframes = inspect.getouterframes


def counted(*args, **kwargs):
    calls.append(1)
    return real_getouterframes(*args, **kwargs)


inspect.getouterframes = counted


def deep(depth):
    if depth:
        return deep(depth - 1)
    if sys.argv[1] == "on-demand":
        from webspider.internals import import_tls_aliases

        import_tls_aliases()
    else:
        import scrapy.core.downloader.contextfactory  # noqa: F401


with warnings.catch_warnings(record=True) as at_import:
    warnings.simplefilter("always")
    deep(30)
# filled when inspect maps every module to its file (getmodule, findsource)
modules_mapped = len(inspect.modulesbyfile)

from scrapy.core.downloader import contextfactory, tls
import scrapy.utils.deprecate

seen = {"import_warnings": [str(w.message) for w in at_import]}
for alias in (
    contextfactory.ScrapyClientContextFactory,
    contextfactory.AcceptableProtocolsContextFactory,
    tls.ScrapyClientTLSOptions,
):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        type("Mine", (alias,), {})
        try:
            alias()
        except TypeError:
            pass  # the warning comes first
    seen[alias.__qualname__] = {
        "module": alias.__module__,
        "mro": [f"{k.__module__}.{k.__qualname__}" for k in alias.__mro__],
        "warnings": [(w.category.__name__, str(w.message)) for w in caught],
    }
print(json.dumps({
    "seen": seen,
    "stack_calls": len(calls),
    "modules_mapped": modules_mapped,
    "inspect_restored": scrapy.utils.deprecate.inspect is inspect,
}))
"""


def tls_aliases(mode: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", TLS_ALIASES, mode],
        cwd=ROOT,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_tls_aliases_on_demand_are_what_a_plain_import_makes():
    plain, on_demand = tls_aliases("plain"), tls_aliases("on-demand")
    assert on_demand["seen"] == plain["seen"]
    # __module__ as inspect.stack()[1] gave it: where each alias is defined
    assert plain["seen"]["ScrapyClientTLSOptions"]["module"] == (
        "scrapy.core.downloader.tls"
    )
    warned = plain["seen"]["ScrapyClientContextFactory"]["warnings"]
    assert [category for category, _ in warned] == ["ScrapyDeprecationWarning"] * 2
    assert plain["seen"]["import_warnings"] == []  # no "Error detecting parent module"


def test_tls_aliases_on_demand_read_no_stack():
    # The plain import reads the whole stack three times and maps every
    # module to its file (what costs); if Scrapy stops doing so, this test
    # says the workaround can go.
    plain = tls_aliases("plain")
    assert plain["stack_calls"] == 3
    assert plain["modules_mapped"] > 100
    on_demand = tls_aliases("on-demand")
    assert on_demand["stack_calls"] == 0
    assert on_demand["modules_mapped"] == 0
    # and scrapy.utils.deprecate has the real inspect module back
    assert on_demand["inspect_restored"] is True


def test_a_stack_on_demand_has_the_records_of_inspect_stack_without_source():
    def deep(depth):
        if depth:
            return deep(depth - 1)
        return _InspectOnDemand().stack(), inspect.stack(0)

    on_demand, plain = deep(5)
    assert len(on_demand) == len(plain)
    for index in (0, 1, 2, 6, -1):
        # the same record, but the line: each stack() is called from its own
        assert on_demand[index].frame is plain[index].frame
        assert on_demand[index].function == plain[index].function
        assert on_demand[index].filename == plain[index].filename
        assert on_demand[index].code_context is None
    with pytest.raises(IndexError):
        on_demand[len(plain)]


def test_getmodule_on_demand_is_inspects_for_a_modules_frame():
    frame = inspect.currentframe()
    assert frame is not None
    module_frame = frame
    while module_frame.f_code.co_name != "<module>" and module_frame.f_back:
        module_frame = module_frame.f_back
    for one in (frame, module_frame):
        assert _InspectOnDemand.getmodule(one) is inspect.getmodule(one)
    assert _InspectOnDemand.getmodule(internal) is sys.modules[__name__]
