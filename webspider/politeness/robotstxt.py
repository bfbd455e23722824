"""robots.txt as RFC 9309 says, replacing Scrapy's RobotsTxtMiddleware.

Scrapy's middleware parses whatever body comes back (a 503 page means "allow
all") and treats a download error as allow-all; RFC 9309 says both mean
"complete disallow". Here:

- robots.txt is fetched once per origin (scheme, host, port), before any
  other request to it; requests to that origin wait (in ``process_request``,
  without holding a place in CONCURRENT_REQUESTS, see .waiting) for the
  answer, requests to other origins do not. A download of it that takes
  longer than ``WEBSPIDER_ROBOTSTXT_DOWNLOAD_TIMEOUT`` (10 s) is a network
  error: a trickling or hanging server holds its origin that long per
  attempt, not DOWNLOAD_TIMEOUT.
- 2xx: parsed (webspider.politeness.robotsrules); 4xx other than 429: no
  rules; 5xx, 429 or a
  network error: nothing of the origin is requested, robots.txt is retried
  with a doubling delay, and when it stays unreachable every request to the
  origin is skipped (reason ``robots_unreachable``), with one warning.
  When every attempt failed because the host name does not resolve,
  its requests fail as ``HostUnresolved`` instead (reported ``dns_error``,
  as without robots.txt: not a skip).
- redirects are followed here (up to 5, to any host); the rules found apply
  to the original origin. An origin whose address the address policy
  refuses (webspider.addresses) is not retried: its requests are skipped
  with reason ``address``; a redirect to a refused address is one that
  cannot be followed.
- the first ``WEBSPIDER_ROBOTSTXT_MAX_BYTES`` are parsed (default 512 KiB,
  never less than 500 KiB); anything after is ignored with a warning.
- the groups are chosen by the product token of ROBOTSTXT_USER_AGENT, else
  USER_AGENT (``webspider``; a browser-style ``Mozilla/5.0 (compatible;
  ExampleBot/0.1; …)`` gives ``examplebot``), else ``*``; rules are kept
  ``WEBSPIDER_ROBOTSTXT_CACHE_TTL`` seconds (at most 24 h), then fetched
  again before the next request to that origin.
- ``Crawl-delay`` is announced with webspider.signals.crawl_delay_found
  (the politeness middleware applies it); ``Sitemap:`` lines seed the crawl
  with ``WEBSPIDER_ROBOTSTXT_SITEMAPS`` (webspider.politeness.sitemaps).

- where the answer is kept: a RobotsStore (webspider.politeness.robotsstore).
  With the crawl state, robots.txt answers are records in it
  (webspider.politeness.robotsrecords): a resumed crawl does not fetch
  again the ones it has (within the TTL), and the parsed rules of at most
  MAX_ORIGINS_IN_MEMORY origins are kept in memory (the least recently
  used are read back from the state when needed).
  With a crawl state shared by several workers, robots.txt is fetched once
  per origin for all of them (webspider.politeness.shared).

Settings: ``ROBOTSTXT_OBEY``, ``WEBSPIDER_ROBOTSTXT_MAX_BYTES``,
``WEBSPIDER_ROBOTSTXT_CACHE_TTL``, ``WEBSPIDER_ROBOTSTXT_RETRY_TIMES``,
``WEBSPIDER_ROBOTSTXT_RETRY_DELAY``, ``WEBSPIDER_ROBOTSTXT_DOWNLOAD_TIMEOUT``,
``ROBOTSTXT_USER_AGENT``, ``USER_AGENT``.
Meta keys honoured: ``dont_obey_robotstxt`` (as Scrapy's); set on its own
requests: ``webspider_robotstxt``.
Stats: ``webspider/robotstxt/<event>_count`` (see the STATS_* constants),
``webspider/skipped/url_count/robots``, ``…/robots_unreachable``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from time import monotonic, time
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urljoin

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.asyncio import sleep
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from webspider import signals, skips
from webspider.config import get_product_token
from webspider.exceptions import (
    AddressRefused,
    HostUnresolved,
    RobotsUnreachable,
    is_dns_failure,
)
from webspider.keys import META_ROBOTSTXT
from webspider.politeness.options import PolitenessOptions
from webspider.politeness.retryafter import retry_after_seconds
from webspider.politeness.robots import (
    ALLOW_ALL,
    MAX_REDIRECTS,
    PARSE,
    REDIRECT,
    backoff,
    outcome_of_status,
    robots_text,
)
from webspider.politeness.robotsrecords import RecordsRobotsStore
from webspider.politeness.robotsrules import RobotsRules
from webspider.politeness.robotsstore import (
    READY,
    REFUSED,
    UNREACHABLE,
    UNRESOLVED,
    RobotsRecord,
    RobotsStore,
)
from webspider.politeness.sharing import shared_store
from webspider.politeness.waiting import CrawlClosing, WaitingRoom
from webspider.utils.url import FETCHABLE_SCHEMES, Origin, origin_of_parts

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from webspider.records import RecordStore

logger = logging.getLogger(__name__)

STATS_FETCHED = "webspider/robotstxt/fetched_count"
STATS_STATUS = "webspider/robotstxt/fetched_count/{}"
STATS_FAILED = "webspider/robotstxt/failed_count"
STATS_RETRIED = "webspider/robotstxt/retried_count"
STATS_UNREACHABLE = "webspider/robotstxt/unreachable_origin_count"
STATS_TRUNCATED = "webspider/robotstxt/truncated_count"
STATS_WAITED = "webspider/robotstxt/waited_request_count"
#: answers read from the crawl state instead of fetched (a resumed crawl)
STATS_STORED = "webspider/robotstxt/from_state_count"
#: rules another worker of a shared crawl fetched, read from the crawl state
STATS_SHARED = "webspider/robotstxt/shared_count"

#: longest Retry-After a robots.txt answer may impose between retries
MAX_ROBOTS_RETRY_AFTER = 3600.0

PENDING = "pending"

#: origins whose parsed rules are kept in memory (the rest are in the store)
MAX_ORIGINS_IN_MEMORY = 1024
#: the crawl closed while another worker was fetching it
CLOSED = "closed"


class Answer(NamedTuple):
    """What one download of an origin's robots.txt found."""

    reachable: bool
    #: the text to parse; None for no rules (or unreachable)
    text: str | None
    #: the final HTTP status (None: no answer)
    status: int | None
    #: why unreachable (for the log and the broken link's detail)
    detail: str = ""
    #: the answer's Retry-After, in seconds
    wait: float | None = None
    #: unreachable because the host name has no address
    unresolved: bool = False


@dataclass
class OriginRobots:
    """What is known about one origin's robots.txt."""

    state: str = PENDING
    #: the rules (None with state READY: no restrictions)
    parser: RobotsRules | None = None
    #: why the origin is unreachable (for the log)
    reason: str = ""
    #: monotonic time after which robots.txt is fetched again
    expires: float = 0.0
    waiters: list[Deferred[None]] = field(default_factory=list)


def origin_url(origin: Origin) -> str:
    scheme, host, port = origin
    if ":" in host:
        host = f"[{host}]"
    default = (scheme == "http" and port == 80) or (scheme == "https" and port == 443)
    return f"{scheme}://{host}" if default else f"{scheme}://{host}:{port}"


class RobotsTxtMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        options = PolitenessOptions.of(settings)
        if not options.obey_robots:
            logger.warning(
                "robots.txt is NOT obeyed (robots=0 / ROBOTSTXT_OBEY=False): "
                "make sure the sites you crawl agree"
            )
            raise NotConfigured
        self.max_bytes = options.robots_max_bytes
        self.ttl = options.robots_cache_ttl
        self.retry_times = options.robots_retry_times
        self.retry_delay = options.robots_retry_delay
        self.download_timeout = options.robots_download_timeout
        self.token = get_product_token(settings) or "*"
        #: least recently used first
        self._origins: OrderedDict[Origin, OriginRobots] = OrderedDict()
        self.max_origins = MAX_ORIGINS_IN_MEMORY
        self.store: RobotsStore = shared_store(crawler) or RecordsRobotsStore()
        crawler.signals.connect(
            self.crawl_state_opened, signal=signals.crawl_state_opened
        )
        self.waiting_room = WaitingRoom(crawler)
        self._fetches: set[Deferred[None]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def crawl_state_opened(self, records: RecordStore) -> None:
        if isinstance(self.store, RecordsRobotsStore):  # not a shared store
            self.store = RecordsRobotsStore(records)

    # -- the decision, per request ---------------------------------------------
    async def process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get("dont_obey_robotstxt") or meta.get(META_ROBOTSTXT):
            return
        parts = urlparse_cached(request)
        if parts.scheme not in FETCHABLE_SCHEMES:
            return
        origin = origin_of_parts(parts)
        origins = self._origins
        entry = origins.get(origin)
        if entry is None or (entry.state != PENDING and entry.expires <= monotonic()):
            entry = self._start_fetch(origin)
        else:
            origins.move_to_end(origin)
        if entry.state == PENDING:
            self._inc(STATS_WAITED)
            waiter: Deferred[None] = Deferred()
            entry.waiters.append(waiter)
            await self.waiting_room.wait(request, waiter)
        if entry.state == UNREACHABLE:
            skips.skip_request(self.crawler, request, skips.ROBOTS_UNREACHABLE)
            raise RobotsUnreachable(request.url, entry.reason)
        if entry.state == UNRESOLVED:
            # a failure, not a choice: reported dns_error, not skipped
            raise HostUnresolved(request.url, entry.reason)
        if entry.state == CLOSED:
            raise IgnoreRequest(f"crawl closing: {request.url}")
        if entry.state == REFUSED:
            # the address middleware records the skip, as for its own refusals
            raise AddressRefused(request.url, entry.reason)
        if not self.allowed(entry, request):
            skips.skip_request(self.crawler, request, skips.ROBOTS)
            raise IgnoreRequest(f"forbidden by robots.txt: {request.url}")

    def allowed(self, entry: OriginRobots, request: Request) -> bool:
        """Whether the origin's rules let ``request`` through."""
        if entry.parser is None:
            return True
        return bool(entry.parser.can_fetch(request.url, self.token))

    # -- fetching ------------------------------------------------------------------
    def _start_fetch(self, origin: Origin) -> OriginRobots:
        entry = OriginRobots()
        self._origins[origin] = entry
        self._origins.move_to_end(origin)
        self._forget()
        d = deferred_from_coro(self._fetch(origin, entry))
        self._fetches.add(d)

        def done(result: Any) -> Any:
            self._fetches.discard(d)
            if isinstance(result, Failure) and isinstance(result.value, CrawlClosing):
                entry.state = CLOSED
                self._release(entry)
                return None
            if entry.state == PENDING:  # an unexpected error: fail closed
                entry.state, entry.reason = UNREACHABLE, "internal error"
                self._release(entry)
            return result

        d.addBoth(done)
        d.addErrback(
            lambda f: logger.error(
                "robots.txt of %s: %s", origin_url(origin), f.getErrorMessage()
            )
        )
        return entry

    def _forget(self) -> None:
        """Drop the least recently used origins past ``max_origins`` (not
        those being fetched): their answers are in the store."""
        origins = self._origins
        excess = len(origins) - self.max_origins
        if excess <= 0:
            return
        for origin in [o for o, e in origins.items() if e.state != PENDING][:excess]:
            del origins[origin]

    async def _fetch(self, origin: Origin, entry: OriginRobots) -> None:
        obtained = await self.store.obtain(
            origin, lambda: self._fetch_record(origin), self.ttl
        )
        record = obtained.record
        if not obtained.fetched_here:
            shared = not isinstance(self.store, RecordsRobotsStore)
            self._inc(STATS_SHARED if shared else STATS_STORED)
        entry.reason = record.reason
        if record.outcome == READY and record.text is not None:
            entry.parser = RobotsRules.parse(record.text)
        entry.expires = monotonic() + obtained.fresh_for
        entry.state = record.outcome
        if entry.parser is not None:
            self._announce(origin, entry.parser)
        self._release(entry)

    async def _fetch_record(self, origin: Origin) -> RobotsRecord:
        """Fetch the origin's robots.txt, retrying while it is unreachable."""
        base = origin_url(origin)
        attempt = 0
        #: every attempt so far found no address for the origin's name
        unresolved = True
        while True:
            try:
                answer = await self._download(base)
            except AddressRefused as exc:
                # the address policy refused the origin: its requests are
                # skipped for that, not retried
                return RobotsRecord(REFUSED, reason=exc.reason, fetched=time())
            if answer.reachable:
                return RobotsRecord(
                    READY, answer.text, status=answer.status, fetched=time()
                )
            self._inc(STATS_FAILED)
            unresolved = unresolved and answer.unresolved
            if attempt >= self.retry_times:
                self._inc(STATS_UNREACHABLE)
                outcome = UNRESOLVED if unresolved else UNREACHABLE
                logger.warning(
                    "robots.txt of %s is unreachable (%s) after %d attempt(s): "
                    "nothing of that origin is crawled (reason: %s)",
                    base,
                    answer.detail,
                    attempt + 1,
                    "dns_error" if unresolved else skips.ROBOTS_UNREACHABLE,
                )
                return RobotsRecord(
                    outcome, reason=answer.detail, status=answer.status, fetched=time()
                )
            delay = backoff(attempt, self.retry_delay)
            delay = max(delay, min(answer.wait or 0.0, MAX_ROBOTS_RETRY_AFTER))
            logger.info(
                "robots.txt of %s unavailable (%s); its requests wait, retrying in %gs",
                base,
                answer.detail,
                delay,
            )
            self._inc(STATS_RETRIED)
            attempt += 1
            await sleep(delay)

    async def _download(self, base: str) -> Answer:
        """Download the origin's robots.txt, following redirects."""
        url = base + "/robots.txt"
        assert self.crawler.engine is not None
        for hop in range(MAX_REDIRECTS + 1):
            request = Request(
                url,
                # not a link of the crawl: no callback, as Scrapy's own robots.txt
                # requests (the reports know such downloads by it)
                callback=NO_CALLBACK,
                dont_filter=True,
                meta={
                    META_ROBOTSTXT: True,
                    "dont_obey_robotstxt": True,
                    "dont_redirect": True,
                    "dont_retry": True,
                    "handle_httpstatus_all": True,
                    "allow_offsite": True,
                    # short: the origin's requests wait for it (a slow one
                    # is unreachable, and retried as such)
                    "download_timeout": self.download_timeout,
                },
            )
            try:
                # Straight to the downloader (not through the scheduler): the
                # requests waiting for these rules must not queue before it.
                response = await self.crawler.engine.download_async(request)
            except AddressRefused as exc:
                if hop == 0:
                    raise  # the origin itself: not unreachable, never to be reached
                # a redirect we must not follow, like one we cannot (RFC 9309 2.3.1.2)
                return Answer(False, None, None, f"redirect refused: {exc.reason}")
            except Exception as exc:  # refused, timeout, DNS, cancelled…
                why = f"{type(exc).__name__}: {exc}".rstrip(": ")
                # the origin's own name (a redirect's target is another host)
                unresolved = hop == 0 and is_dns_failure(exc)
                return Answer(False, None, None, why, unresolved=unresolved)
            self._inc(STATS_FETCHED)
            self._inc(STATS_STATUS.format(response.status))
            outcome = outcome_of_status(response.status)
            status = response.status
            if outcome == PARSE:
                return Answer(True, self._text(url, response), status)
            if outcome == ALLOW_ALL:
                return Answer(True, None, status)
            if outcome == REDIRECT:
                location = response.headers.get(b"Location")
                target = urljoin(url, location.decode("latin-1")) if location else ""
                if target.split(":", 1)[0].lower() not in FETCHABLE_SCHEMES:
                    # RFC 9309 2.3.1.2: a redirect we cannot follow is like a
                    # robots.txt we cannot reach.
                    why = f"HTTP {response.status} without a usable Location"
                    return Answer(False, None, status, why)
                url = target
                continue
            wait = retry_after_seconds(response.headers.get(b"Retry-After"), time())
            return Answer(False, None, status, f"HTTP {status}", wait)
        return Answer(False, None, None, f"more than {MAX_REDIRECTS} redirects")

    def _text(self, url: str, response: Response) -> str:
        text, truncated = robots_text(response.body, self.max_bytes)
        if truncated:
            self._inc(STATS_TRUNCATED)
            logger.warning(
                "robots.txt at %s is %d bytes; only the first %d are obeyed",
                url,
                len(response.body),
                self.max_bytes,
            )
        return text

    def _announce(self, origin: Origin, parser: RobotsRules) -> None:
        # Sent also without a Crawl-delay (0), so a re-read robots.txt that
        # dropped it lifts it.
        delay = parser.crawl_delay(self.token) or 0.0
        self.crawler.signals.send_catch_log(
            signals.crawl_delay_found, origin=origin, delay=float(delay)
        )
        self.crawler.signals.send_catch_log(
            signals.robots_rules_found, origin=origin, parser=parser
        )

    def _release(self, entry: OriginRobots) -> None:
        waiters, entry.waiters = entry.waiters, []
        for waiter in waiters:
            waiter.callback(None)

    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)
