"""webspider.signals.SignalManager: the same receivers called with the same
arguments, the same results and the same log records as Scrapy's."""

from __future__ import annotations

import functools
import logging
import warnings
from typing import Any

import pytest
from pydispatch import dispatcher
from scrapy.exceptions import ScrapyDeprecationWarning, StopDownload
from scrapy.signalmanager import SignalManager as ScrapySignalManager
from scrapy.utils.defer import deferred_f_from_coro_f
from twisted.internet.defer import Deferred, succeed
from twisted.python.failure import Failure

from tests.support.tasks import counted_tasks
from webspider.signals import SignalManager, live_receivers

SIGNAL = object()


class Handlers:
    """Receivers of every shape robustApply sorts out; each records what it
    was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def named(self, response: Any, spider: Any = None) -> str:
        self.calls.append(("named", {"response": response, "spider": spider}))
        return "named"

    def everything(self, **kwargs: Any) -> int:
        self.calls.append(("everything", kwargs))
        return len(kwargs)

    def nothing(self) -> None:
        self.calls.append(("nothing", {}))

    def keyword_only(self, *, response: Any) -> None:
        # robustApply passes only positional-or-keyword names: this one is
        # called without ``response`` and fails (the same in both)
        self.calls.append(("keyword_only", {"response": response}))

    def fails(self, response: Any) -> None:
        raise ValueError(f"broken {response}")

    def stops(self, response: Any) -> None:
        raise StopDownload(fail=False)

    def deferred(self, response: Any) -> Any:
        return succeed(response)

    def __call__(self, response: Any, sender: Any) -> str:
        self.calls.append(("call", {"response": response, "sender": sender}))
        return "called"


def plain(response: Any, signal: Any) -> tuple[Any, Any]:
    return (response, signal is SIGNAL)


def with_default(sender: Any, extra: int = 3) -> int:
    return extra


def summary(results: list[tuple[Any, Any]]) -> list[tuple[str, Any]]:
    out = []
    for receiver, result in results:
        name = getattr(receiver, "__name__", type(receiver).__name__)
        shown = result
        if isinstance(result, Failure):
            shown = (type(result.value).__name__, str(result.value).split(" at 0x")[0])
        elif isinstance(result, Deferred):
            shown = ("Deferred", result.result)
        out.append((name, shown))
    return out


def send(manager_class: type, caplog: pytest.LogCaptureFixture, **kwargs: Any) -> Any:
    sender = object()
    manager = manager_class(sender)
    handlers = Handlers()
    receivers = [
        handlers.named,
        handlers.everything,
        handlers.nothing,
        handlers.keyword_only,
        handlers.fails,
        handlers.stops,
        handlers.deferred,
        handlers,
        plain,
        with_default,
        functools.partial(with_default, extra=5),
    ]
    for receiver in receivers:
        manager.connect(receiver, signal=SIGNAL)
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        results = manager.send_catch_log(
            SIGNAL, response="page", spider="spider", **kwargs
        )
    for receiver in receivers:
        manager.disconnect(receiver, signal=SIGNAL)
    calls = [
        (name, {k: v for k, v in given.items() if k != "sender"})
        for name, given in handlers.calls
    ]
    records = [
        (r.name, r.levelname, r.getMessage().split(" at 0x")[0]) for r in caplog.records
    ]
    return summary(results), calls, records


@pytest.mark.parametrize("dont_log", [None, ValueError, (ValueError,), [KeyError]])
def test_same_calls_results_and_log_records(caplog, dont_log) -> None:
    kwargs = {} if dont_log is None else {"dont_log": dont_log}
    ours = send(SignalManager, caplog, **kwargs)
    scrapys = send(ScrapySignalManager, caplog, **kwargs)
    assert ours == scrapys
    results, calls, records = ours
    assert ("keyword_only", {"response": "page"}) not in calls
    assert ("call", {"response": "page"}) in calls
    assert ("named", "named") in results
    assert ("everything", 4) in results  # signal, sender, response, spider
    assert ("with_default", 3) in results
    # robustApply cannot read a partial's code: it fails, in both
    assert (
        "partial",
        (
            "ValueError",
            "unknown reciever type functools.partial(<function with_default",
        ),
    ) in results
    assert ("keyword_only", ("TypeError", results[3][1][1])) in results
    logged = [message for _, level, message in records if level == "ERROR"]
    assert any("Cannot return deferreds" in m for m in logged)
    assert any("Error caught" in m and "fails" in m for m in logged) == (
        dont_log not in (ValueError, (ValueError,))
    )
    assert not any("stops" in m for m in logged)


def test_a_receiver_gone_is_not_called() -> None:
    sender = object()
    manager = SignalManager(sender)
    handlers = Handlers()
    manager.connect(handlers.named, signal=SIGNAL)
    assert summary(manager.send_catch_log(SIGNAL, response=1)) == [("named", "named")]
    del handlers
    assert manager.send_catch_log(SIGNAL, response=1) == []


def test_connections_made_through_another_manager_are_reached() -> None:
    """The crawl command replaces a crawler's manager: handlers connected
    through Scrapy's (same sender) are called by webspider's."""
    sender = object()
    handlers = Handlers()
    ScrapySignalManager(sender).connect(handlers.named, signal=SIGNAL)
    results = SignalManager(sender).send_catch_log(SIGNAL, response=2)
    assert summary(results) == [("named", "named")]
    assert handlers.calls == [("named", {"response": 2, "spider": None})]


def test_receivers_of_any_signal_or_sender_are_reached() -> None:
    """The short cut for a signal nobody receives looks at the receivers of
    every signal and of every sender too."""
    sender = object()
    handlers = Handlers()
    manager = SignalManager(sender)
    assert manager.send_catch_log(SIGNAL, response=3) == []
    manager.connect(handlers.named, signal=dispatcher.Any)
    assert summary(manager.send_catch_log(SIGNAL, response=3)) == [("named", "named")]
    manager.disconnect(handlers.named, signal=dispatcher.Any)
    dispatcher.connect(handlers.everything, signal=SIGNAL, sender=dispatcher.Any)
    try:
        assert summary(manager.send_catch_log(SIGNAL, response=4)) == [
            ("everything", 3)
        ]
    finally:
        dispatcher.disconnect(handlers.everything, signal=SIGNAL, sender=dispatcher.Any)
    assert manager.send_catch_log(SIGNAL, response=5) == []


def test_live_receivers_as_pydispatch_finds_them() -> None:
    """Order, each receiver once, weak references resolved, dead ones out."""
    sender = object()
    handlers, gone = Handlers(), Handlers()
    for receiver, signal, source in [
        (handlers.named, SIGNAL, sender),
        (plain, dispatcher.Any, sender),
        (handlers.named, dispatcher.Any, sender),  # twice: once in the answer
        (gone.named, SIGNAL, sender),
        (handlers.everything, SIGNAL, dispatcher.Any),
        (with_default, dispatcher.Any, dispatcher.Any),
    ]:
        dispatcher.connect(receiver, signal=signal, sender=source)
    del gone
    try:
        for asked in (SIGNAL, object()):
            expected = list(
                dispatcher.liveReceivers(dispatcher.getAllReceivers(sender, asked))
            )
            assert live_receivers(sender, asked) == expected
        assert live_receivers(sender, SIGNAL) == [
            handlers.named,
            plain,
            handlers.everything,
            with_default,
        ]
    finally:
        for receiver, signal, source in [
            (handlers.named, SIGNAL, sender),
            (plain, dispatcher.Any, sender),
            (handlers.named, dispatcher.Any, sender),
            (handlers.everything, SIGNAL, dispatcher.Any),
            (with_default, dispatcher.Any, dispatcher.Any),
        ]:
            dispatcher.disconnect(receiver, signal=signal, sender=source)
    assert live_receivers(sender, SIGNAL) == []


class AsyncHandlers(Handlers):
    """The receivers an asynchronous send takes without Scrapy's tasks:
    plain functions and methods (no partial, no callable object)."""

    async def coroutine(self, response: Any) -> str:
        self.calls.append(("coroutine", {"response": response}))
        return "awaited"


async def send_async(
    manager_class: type,
    caplog: pytest.LogCaptureFixture,
    receivers_of: Any,
    **kwargs: Any,
) -> Any:
    sender = object()
    manager = manager_class(sender)
    handlers = AsyncHandlers()
    receivers = receivers_of(handlers)
    for receiver in receivers:
        manager.connect(receiver, signal=SIGNAL)
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        results = await manager.send_catch_log_async(
            SIGNAL, response="page", spider="spider", **kwargs
        )
    for receiver in receivers:
        manager.disconnect(receiver, signal=SIGNAL)
    calls = [
        (name, {k: v for k, v in given.items() if k != "sender"})
        for name, given in handlers.calls
    ]
    records = [
        (r.name, r.levelname, r.getMessage().split(" at 0x")[0]) for r in caplog.records
    ]
    shown = [
        (
            getattr(receiver, "__name__", type(receiver).__name__),
            (type(result).__name__, str(result).split(" at 0x")[0])
            if isinstance(result, BaseException)
            else result,
        )
        for receiver, result in results
    ]
    return shown, calls, records


def plain_receivers(handlers: AsyncHandlers) -> list[Any]:
    return [
        handlers.named,
        handlers.everything,
        handlers.nothing,
        handlers.keyword_only,
        handlers.fails,
        handlers.stops,
        plain,
        with_default,
    ]


def mixed_receivers(handlers: AsyncHandlers) -> list[Any]:
    return [
        handlers.named,
        handlers.coroutine,
        handlers.fails,
        handlers,
        functools.partial(with_default, extra=5),
        plain,
    ]


@pytest.mark.parametrize("receivers_of", [plain_receivers, mixed_receivers])
@pytest.mark.parametrize("dont_log", [None, ValueError, (ValueError,), [KeyError]])
@deferred_f_from_coro_f
async def test_async_same_calls_results_and_log_records(caplog, dont_log, receivers_of):
    kwargs = {} if dont_log is None else {"dont_log": dont_log}
    ours = await send_async(SignalManager, caplog, receivers_of, **kwargs)
    scrapys = await send_async(ScrapySignalManager, caplog, receivers_of, **kwargs)
    assert ours == scrapys
    results, _calls, records = ours
    assert ("named", "named") in results
    logged = [message for _, level, message in records if level == "ERROR"]
    assert any("Error caught" in m and "fails" in m for m in logged) == (
        dont_log not in (ValueError, (ValueError,))
    )
    if receivers_of is plain_receivers:
        assert ("everything", 4) in results
        assert ("stops", ("StopDownload", "")) in results
    else:
        assert ("coroutine", "awaited") in results


@deferred_f_from_coro_f
async def test_async_a_deferred_returned_is_awaited_with_scrapys_warning(caplog):
    """A plain receiver that returns a Deferred: awaited, with Scrapy's
    deprecation warning (an error under this suite's filterwarnings: caught
    and logged as Scrapy's own send catches and logs it)."""

    def receivers_of(handlers: AsyncHandlers) -> list[Any]:
        return [handlers.deferred, handlers.named]

    ours = await send_async(SignalManager, caplog, receivers_of)
    assert ours == await send_async(ScrapySignalManager, caplog, receivers_of)
    assert ours[0][0] == ("deferred", ("ScrapyDeprecationWarning", ours[0][0][1][1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScrapyDeprecationWarning)
        ours = await send_async(SignalManager, caplog, receivers_of)
        assert ours == await send_async(ScrapySignalManager, caplog, receivers_of)
    assert ours[0][0] == ("deferred", "page")


@deferred_f_from_coro_f
async def test_async_plain_receivers_start_no_task():
    """Scrapy's send starts an asyncio task a receiver (and a gather); plain
    receivers are called in turn instead: no task, the same results."""
    sender = object()
    handlers = Handlers()
    receivers = [handlers.named, handlers.everything, plain]
    sends = {}
    for receiver in receivers:
        ScrapySignalManager(sender).connect(receiver, signal=SIGNAL)
    try:
        for cls in (SignalManager, ScrapySignalManager):
            with counted_tasks() as started:
                results = await cls(sender).send_catch_log_async(SIGNAL, response=1)
            sends[cls] = (sum(started.values()), summary(results))
    finally:
        for receiver in receivers:
            ScrapySignalManager(sender).disconnect(receiver, signal=SIGNAL)
    ours, scrapys = sends[SignalManager], sends[ScrapySignalManager]
    expected = [("named", "named"), ("everything", 3), ("plain", (1, True))]
    assert ours[1] == scrapys[1] == expected
    assert scrapys[0] >= 3
    assert ours[0] == 0
