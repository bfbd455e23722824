"""Signals webspider sends, in addition to Scrapy's own.

Connect handlers with ``crawler.signals.connect(handler, signal=...)``; the
arguments each signal sends are documented in the README ("Signals").

``listened(crawler, signal)``: whether any handler is connected to a signal;
the per-page signals are not sent (nor their arguments built) when none is.

``SignalManager``: Scrapy's, with a cheaper ``send_catch_log`` (what each
receiver accepts is read once, not at every call) and ``send_catch_log_async``
(plain functions called in turn, not an asyncio task each); the ``crawl``
command gives it to the crawler before any component is built.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Sequence
from types import FunctionType, MethodType
from typing import TYPE_CHECKING, Any

from pydispatch import dispatcher
from pydispatch.robustapply import robustApply
from scrapy.exceptions import StopDownload
from scrapy.signalmanager import SignalManager as ScrapySignalManager
from scrapy.utils.asyncio import is_asyncio_available
from scrapy.utils.defer import ensure_awaitable
from scrapy.utils.python import global_object_name
from scrapy.utils.signal import send_catch_log_async as scrapy_send_catch_log_async
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from webspider.storage import stop_crawl

if TYPE_CHECKING:
    from collections.abc import Awaitable
    from types import CodeType

    from scrapy.crawler import Crawler

#: the logger of Scrapy's send_catch_log: the same records as before
logger = logging.getLogger("scrapy.utils.signal")

#: A URL the crawl found but will not request (now). Sent with ``url``,
#: ``reason`` (one of the reason constants in webspider.skips) and ``referer``
#: (or None). Reason ``depth`` is sent when the crawl ends or pauses, for the
#: URLs still deferred then (a deferral is no skip: a later round fetches it).
url_skipped = object()

#: URLs the crawl found but will not request, recorded together (e.g. the
#: outside links of one page). Sent with ``skipped`` (a list of (url, reason)
#: pairs) and ``referer`` (or None). Every one of them is also sent as
#: ``url_skipped`` to whoever connects to that; a handler of many skips
#: connects here instead and is spared a signal per URL.
urls_skipped = object()

#: A page reached the spider (sent before its callback runs, for every
#: response that gets there, HTML or not). Sent with ``response``, ``depth``
#: and ``directives`` (a mutable webspider.directives.parse.Directives: set
#: ``nofollow``/``noindex``, or call ``dont_follow(url)``, and the crawl acts
#: exactly as if the page had said so). Sent by the page-directives middleware.
page_found = object()

#: The requests a page's callback produced are about to be handed to the
#: scheduler. Sent with ``url`` (the page's), ``depth`` (the page's) and
#: ``urls`` (a list of the requests' URLs; removing a URL from it drops that
#: request, recorded as skipped with reason ``nofollow_link``).
links_queued = object()

#: A page is done: its callback's output was processed, or it failed. Sent
#: with ``url``, ``status`` (the HTTP status, None when no response came) and
#: ``error`` (None, or the error text when the download failed).
page_complete = object()

#: The spider is about to follow the links of a page (not sent for duplicate
#: pages nor link checks). Sent with ``response`` and ``page`` (its
#: webspider.page.links.ParsedPage); handlers must be cheap, they run once
#: per page.
links_extracted = object()

#: A request of the spider failed: an HTTP error, a download error, or a
#: middleware's decision not to fetch it (IgnoreRequest). Sent by the spider's
#: errback with ``request`` and ``failure``.
request_failed = object()

#: robots.txt of an origin was read. Sent with ``origin`` (scheme, host, port)
#: and ``delay``: its ``Crawl-delay`` in seconds, 0 when it has none; the
#: politeness middleware spaces requests to that origin accordingly.
crawl_delay_found = object()

#: robots.txt of an origin was parsed. Sent with ``origin`` (scheme, host,
#: port) and ``parser`` (a webspider.politeness.robotsrules.RobotsRules:
#: ``can_fetch``, ``crawl_delay`` and ``sitemaps`` as protego's parser has
#: them); the sitemap seeder listens.
robots_rules_found = object()

#: The crawl state was opened (by the frontier's scheduler, before Scrapy's
#: ``spider_opened``). Sent with ``records``: a webspider.records.RecordStore
#: — where a feature keeps its per-URL data (``records.records(name)``), in
#: the same transactions as the queue's. Not sent when another SCHEDULER
#: runs the crawl: features then keep their records in memory.
crawl_state_opened = object()

#: The crawl state is about to commit a batch (about once a second, at a
#: round change, and before it closes). Sent with ``records``; a feature
#: writes here what must be committed together with the acknowledgements so
#: far (running totals of counters), synchronously.
crawl_state_committing = object()

#: Leased requests are done: the embedded crawl state holds their
#: acknowledgement, committed with the next ``crawl_state_committing``'s
#: writes (a shared state sends the acknowledgements after that signal, on
#: its commit). Sent with ``tickets``: the leases' tickets, which the
#: scheduler's ``lease_ticket(request)`` gave for their requests. What a
#: feature keeps of a page until its lease is acknowledged and writes on
#: the next commit is committed exactly once: a page whose acknowledgement
#: a kill lost is fetched again, and only then kept again. Sent only when
#: a handler is connected.
requests_acknowledged = object()

#: The crawl state is about to be committed and closed, at the end of a crawl
#: (after the downloads and the scraper closed, before Scrapy's
#: ``spider_closed``, when the state is already closed). Sent with ``reason``
#: (the close reason), ``records`` and ``commit`` (commits the crawl state:
#: a long piece of work calls it every so often, so that a kill loses
#: little); a feature finishes what it keeps in the state here,
#: synchronously.
crawl_state_closing = object()

#: The crawl ends (sent just before ``crawl_state_closing``, with the same
#: arguments) when the crawl state closes on the event loop, as it does in a
#: crawl (not when a scheduler is closed outside one): a handler may be a
#: coroutine, awaited before the state closes, so a long piece of work can
#: wait for another process (the mirror's fix-up shares its files with the
#: page worker). A feature that finishes here must still finish on
#: ``crawl_state_closing`` when this was not sent.
crawl_state_finishing = object()


def listened(crawler: Crawler, signal: Any) -> bool:
    """Whether a handler is connected to ``signal`` sent by ``crawler.signals``
    (or to every signal): two dictionary look-ups, where sending a signal
    nobody receives costs a walk over four receiver tables and, for
    ``links_queued``, a list of the page's URLs. Asked again for every page,
    so a handler connected while the crawl runs gets the next one. A dead
    weak reference left in the tables counts as a handler (the signal is sent
    and reaches nobody, as before)."""
    return _connected(crawler.signals.sender, signal)


def _connected(sender: Any, signal: Any) -> bool:
    """Whether pydispatch's tables hold a receiver of ``signal`` from
    ``sender`` (or of any signal, or from any sender)."""
    connections = dispatcher.connections
    for one in (sender, dispatcher.Any):
        table = connections.get(id(one))
        if table and (table.get(signal) or table.get(dispatcher.Any)):
            return True
    return False


#: id of the code object of a receiver -> (the code, the keyword arguments it
#: is given; None: all, it takes ``**kwargs``): what pydispatch's robustApply
#: works out per call. Keyed by id, not by the code: a code object's hash is
#: worked out from its contents (name, bytecode, constants…) on every call,
#: which cost more than the rest of ``apply``; the code is held in the value,
#: so its id is never reused by another object.
_ACCEPTS: dict[int, tuple[CodeType, frozenset[str] | None]] = {}
_VARKEYWORDS = 0x08  # inspect.CO_VARKEYWORDS


def _accepts(code: CodeType, start: int) -> frozenset[str] | None:
    held = _ACCEPTS.get(id(code))
    if held is None:
        accepts = (
            None
            if code.co_flags & _VARKEYWORDS
            else frozenset(code.co_varnames[start : code.co_argcount])
        )
        _ACCEPTS[id(code)] = held = (code, accepts)
    return held[1]


def apply(receiver: Any, named: dict[str, Any]) -> Any:
    """``robustApply(receiver, **named)``: the receiver called with the
    arguments it names (all of them if it takes ``**kwargs``), its code read
    once for Python functions and methods (robustApply reads it, with a
    dozen attribute look-ups, for every receiver of every signal sent)."""
    kind = type(receiver)
    if kind is MethodType and type(receiver.__func__) is FunctionType:
        accepts = _accepts(receiver.__func__.__code__, 1)
    elif kind is FunctionType:
        accepts = _accepts(receiver.__code__, 0)
    else:
        return robustApply(receiver, **named)
    if accepts is None:
        return receiver(**named)
    return receiver(**{k: v for k, v in named.items() if k in accepts})


def live_receivers(sender: Any, signal: Any) -> list[Any]:
    """``list(liveReceivers(getAllReceivers(sender, signal)))``: the same
    receivers in the same order (of ``signal`` from ``sender``, of any
    signal from ``sender``, of ``signal`` from any sender, of any signal
    from any sender; each once, weak references resolved, dead ones left
    out), read with ``dict.get``: getAllReceivers raises and catches a
    KeyError for each of its four tables that is missing, a generator
    feeding another."""
    connections = dispatcher.connections
    lists = []
    for one in (sender, dispatcher.Any):
        table = connections.get(id(one))
        if table:
            for key in (signal, dispatcher.Any):
                found = table.get(key)
                if found:
                    lists.append(found)
    if not lists:
        return []
    live: list[Any] = []
    seen: set[Any] = set()
    for found in lists:
        for receiver in found:
            if not receiver:  # a dead instance-method weak reference
                continue
            if len(lists) > 1:
                try:
                    if receiver in seen:
                        continue
                    seen.add(receiver)
                except TypeError:  # dead weak references raise on hash
                    continue
            if isinstance(receiver, dispatcher.WEAKREF_TYPES):
                receiver = receiver()  # noqa: PLW2901
                if receiver is None:
                    continue
            live.append(receiver)
    return live


def _log_caught(receiver: Any, sender: Any, spider: Any, error: BaseException) -> None:
    """Scrapy's record of the exception a receiver raised, with its
    traceback; a write the disk refused stops the crawl instead, in one line
    (webspider.storage)."""
    if stop_crawl(sender, error):
        return
    logger.error(
        "Error caught on signal handler: %(receiver)s",
        {"receiver": receiver},
        exc_info=error,
        extra={"spider": spider},
    )


def send_catch_log(signal: Any, sender: Any, **named: Any) -> list[tuple[Any, Any]]:
    """Scrapy's ``scrapy.utils.signal.send_catch_log`` (same receivers, same
    results, same log records), with ``apply`` for robustApply and
    ``receivers`` for pydispatch's getAllReceivers."""
    receivers = live_receivers(sender, signal)
    if not receivers:
        return []
    dont_log = named.pop("dont_log", ())
    if type(dont_log) is not tuple:
        dont_log = tuple(dont_log) if isinstance(dont_log, Sequence) else (dont_log,)
    dont_log += (StopDownload,)
    spider = named.get("spider")
    named = {"signal": signal, "sender": sender, **named}
    responses: list[tuple[Any, Any]] = []
    for receiver in receivers:
        result: Any
        try:
            response = apply(receiver, named)
            if isinstance(response, Deferred):
                logger.error(
                    "Cannot return deferreds from signal handler: %(receiver)s",
                    {"receiver": receiver},
                    extra={"spider": spider},
                )
        except dont_log:
            result = Failure()  # type: ignore[no-untyped-call]
        except Exception as ex:
            result = Failure()  # type: ignore[no-untyped-call]
            _log_caught(receiver, sender, spider, ex)
        else:
            result = response
        responses.append((receiver, result))
    return responses


#: code flags of a function whose call returns an awaitable without running
#: its body: ``async def`` (and async generators, generator coroutines)
_ASYNC_FLAGS = (
    inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | inspect.CO_ASYNC_GENERATOR
)


def _plain(receiver: Any) -> bool:
    """Whether ``receiver`` is a Python function or method, not ``async``:
    its body runs when it is called."""
    kind = type(receiver)
    if kind is MethodType:
        receiver = receiver.__func__
        kind = type(receiver)
    return kind is FunctionType and not receiver.__code__.co_flags & _ASYNC_FLAGS


#: the asyncio reactor was found installed (it stays for the process's life)
_ASYNCIO: list[bool] = []


def _asyncio_available() -> bool:
    """``is_asyncio_available()``, asked of the reactor once it said yes."""
    if _ASYNCIO:
        return True
    if is_asyncio_available():
        _ASYNCIO.append(True)
        return True
    return False


async def send_catch_log_async(
    signal: Any, sender: Any, **named: Any
) -> list[tuple[Any, Any]]:
    """Scrapy's ``send_catch_log_async`` on the asyncio reactor (same
    receivers, same results, same log records) when every receiver is a
    plain function or method: they are called in turn, as Scrapy's tasks
    would call them (one each, started in that order, each running to its
    end), and only what they return that is awaitable is awaited, together.
    Scrapy starts an asyncio task a receiver, and a ``gather``, for every
    send: ``item_scraped`` is sent once a page, to three receivers, and
    that cost ~80 µs where calling them costs ~12. With any other receiver
    (a coroutine function, a ``partial``, an object), or without a running
    asyncio loop, Scrapy's own."""
    receivers = live_receivers(sender, signal)
    if not receivers:
        return []
    if not all(map(_plain, receivers)) or not _asyncio_available():
        return await scrapy_send_catch_log_async(signal, sender, **named)
    dont_log = named.pop("dont_log", ())
    if type(dont_log) is not tuple:  # an ABC check a send, when it is not
        dont_log = tuple(dont_log) if isinstance(dont_log, Sequence) else (dont_log,)
    spider = named.get("spider")
    named = {"signal": signal, "sender": sender, **named}
    results: list[tuple[Any, Any]] = []
    waits: list[tuple[int, Any, Awaitable[Any]]] = []
    for receiver in receivers:
        result: Any
        try:
            result = apply(receiver, named)
            if isinstance(result, Deferred) or inspect.isawaitable(result):
                waits.append(
                    (
                        len(results),
                        receiver,
                        ensure_awaitable(result, _warn=global_object_name(receiver)),
                    )
                )
                result = None
        except dont_log as ex:  # pylint: disable=catching-non-exception
            result = ex
        except Exception as ex:
            _log_caught(receiver, sender, spider, ex)
            result = ex
        results.append((receiver, result))
    if waits:
        awaited = await asyncio.gather(
            *(
                _outcome(w, receiver, dont_log, sender, spider)
                for _, receiver, w in waits
            )
        )
        for (index, receiver, _), result in zip(waits, awaited, strict=True):
            results[index] = (receiver, result)
    return results


async def _outcome(
    awaitable: Awaitable[Any],
    receiver: Any,
    dont_log: tuple[type[BaseException], ...],
    sender: Any,
    spider: Any,
) -> Any:
    try:
        return await awaitable
    except dont_log as ex:  # pylint: disable=catching-non-exception
        return ex
    except Exception as ex:
        _log_caught(receiver, sender, spider, ex)
        return ex


class SignalManager(ScrapySignalManager):
    """Scrapy's SignalManager with ``send_catch_log`` and
    ``send_catch_log_async`` above: the per-page
    signals (Scrapy's ``response_received``, ``headers_received``,
    ``bytes_received``, ``request_reached_downloader``…, webspider's
    ``links_extracted``) cost their receivers' calls and little more.
    Connections are pydispatch's, by sender: a manager made for a crawler
    reaches the handlers connected through the one it replaces."""

    def send_catch_log(self, signal: Any, **kwargs: Any) -> list[tuple[Any, Any]]:
        kwargs.setdefault("sender", self.sender)
        return send_catch_log(signal, **kwargs)

    async def send_catch_log_async(
        self, signal: Any, **kwargs: Any
    ) -> list[tuple[Any, Any]]:
        kwargs.setdefault("sender", self.sender)
        return await send_catch_log_async(signal, **kwargs)
