"""The crawl state on Redis: many workers, one crawl (redis-py).

A second implementation of webspider.frontier.state.CrawlState: every worker
of a distributed crawl opens the same ``RedisState`` (same URL, same crawl
name) and they share the queue, the seen-set, the leases, the deferred
frontier and the round. The layout and the scripts are in
webspider.frontier.redisscripts; every update of more than one key is one
Lua script, so a worker killed at any moment leaves the state consistent.

Leases have deadlines. A worker renews its own (``renew``) and every worker
calls ``expire`` now and then: the leases of a worker that died (kill -9, a
lost machine) return to their origin's queue once their deadline passed,
and another worker fetches them. ``close`` puts back the leases this
worker still holds. Deadlines are ``time.time()`` of the workers: their
clocks must agree to well within the lease timeout (NTP does).

The seen-set keeps a 96-bit fingerprint of each URL (BLAKE2b of its key):
the first 2 bytes pick one of 65,536 small hashes, the other 10 are the
field. Redis keeps a hash of up to ``hash-max-listpack-entries`` (128)
fields as a listpack: 14 bytes a URL whatever the URL's length, plus the
bucket's own overhead (about 22 bytes a URL in all at a million URLs,
bench/redis_workers.py). The fullest buckets pass 128 fields near 5
million URLs (each then becomes a hash table, several times the memory):
a larger crawl wants that Redis setting raised (512: about 25 million).
Exact keys, as this state kept before (format 1), cost the URL's path and
more, and a bucket holding one path longer than
``hash-max-listpack-value`` (64 bytes) became a hash table.

Why a fingerprint drops no URL. A URL not yet seen is taken as seen only if
its 96 bits equal those of one of the n URLs seen: at most n / 2**96 a
check. A crawl of 10 million URLs checking 50 links on each of its pages
(5 * 10**8 checks) drops a URL with a probability below 10**-13; 64 bits
would give 3 * 10**-4 at that size, hence 96.

Untrusted data. The queue is only data: a request is JSON behind a short
text header, and anything else found in the queue (a pickled request pushed
by a scrapy-redis worker, a stray value) is dropped and logged once — never
unpickled or evaluated.

Redis unreachable or restarted: every call waits and retries with backoff
(one log line when Redis goes away, one when it is back). Except before the
crawl starts (``reach_within``: the crawl command's check): a Redis that does
not answer then is most likely a wrong address, and the crawl is refused
with one line rather than left waiting for it without end. A script whose
reply was lost is run again, which is safe: ``add`` of a key already added
says "seen", an ack of an ended lease does nothing, ``next_round`` is keyed
on the round, and a lease whose reply was lost comes back at its deadline.
With Redis persistence on (appendonly) nothing committed is lost; without
it a restarted Redis is empty, and the workers stop with one line.

``commit`` has nothing to do: each call is applied when it returns. So are
the records (webspider.frontier.redisrecords): a worker killed before its
acks reached Redis leaves the records of those pages written, and the
worker that fetches them again writes them again; record writers are kept
idempotent for that.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.commands.core import Script
from redis.retry import Retry

from webspider.frontier.options import mask_password
from webspider.frontier.redisrecords import PendingWrites, RedisRecords, nothing_more
from webspider.frontier.redisscripts import (
    ADD,
    CLAIM_NEW_RUN,
    END,
    LEASE,
    NEXT_ROUND,
    SEEN,
    START_NEW_RUN,
)
from webspider.frontier.state import (
    META_FINISHED,
    META_FORMAT,
    Counts,
    Lease,
    StateError,
    StateRefused,
    StoredRequest,
    damaged_refusal,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

logger = logging.getLogger(__name__)

#: confirmed seen keys kept in memory (the links every page repeats)
_CONFIRMED_MAX = 1 << 14
#: a positive "pending" answer is trusted this long (the engine asks often)
_PENDING_TTL = 0.2
#: Redis errors that mean "not reachable right now": wait and retry
_TRANSIENT = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)
#: seconds a worker emptying a finished crawl holds its claim without
#: renewing it (renewed every 1,000 keys deleted)
_NEW_RUN_TTL = 30.0
#: bad entries logged one by one before the rest are only counted
_BAD_LOGGED = 10


def crawl_prefix(name: str) -> str:
    # the braces are a hash tag: one slot, so that scripts may use every key
    return f"webspider:{{{name}}}:"


#: the layout of the crawl on Redis: 1 kept exact keys in the seen-set, 2
#: their 96-bit fingerprints, 3 the features' records keyed by the crawl's
#: shared URL codes (webspider.utils.urlcodes), 4 a link waiting for its
#: target one flagged record for the mirror and the reports
#: (webspider.utils.waitinglinks) and the mirror's index keyed by site code
#: and path (webspider.mirror.state), 5 no ``mirror.where`` (a file's place
#: is read from the mirror's index record); a state of another format is
#: refused, never misread
FORMAT = 5
#: bytes of a seen-set fingerprint (redisscripts' FP)
SEEN_FP_BYTES = 12


def seen_fingerprint(key: str) -> bytes:
    """The seen-set's fingerprint of ``key`` (see the module docstring)."""
    return hashlib.blake2b(
        key.encode("utf-8", "surrogatepass"), digest_size=SEEN_FP_BYTES
    ).digest()


class RedisState:
    """``RedisState(url, name)``: the crawl ``name`` on the Redis at ``url``.

    ``worker``: this worker's name (its output offsets are its own);
    ``fresh``: delete the crawl's keys first. See the module docstring and
    webspider.frontier.state.CrawlState."""

    #: several workers share it (the scheduler renews and expires leases)
    shared = True

    def __init__(
        self,
        url: str,
        name: str,
        *,
        worker: str = "worker",
        fresh: bool = False,
        check_format: bool = True,
        commit_interval: float = 1.0,
        commit_acks: int | None = 32,
        client: redis.Redis | None = None,
        reach_within: float | None = None,
    ) -> None:
        self.where = f"{mask_password(url)} (crawl {name})"
        try:
            self._password = urlsplit(url).password or ""
        except ValueError:
            self._password = ""
        self.prefix = crawl_prefix(name)
        self.worker = worker
        #: ties this process's leases to it (a restarted worker is another)
        self.token = f"{worker}#{uuid.uuid4().hex[:8]}"
        self.commit_interval = commit_interval
        self.commit_acks = commit_acks
        try:
            # no retries inside redis-py: _call retries, logs, and knows
            # which calls are safe to run again
            self.redis = client or redis.Redis.from_url(
                url,
                socket_connect_timeout=5,
                socket_timeout=60,
                retry=Retry(NoBackoff(), 0),
            )
        except ValueError as exc:
            raise StateError(f"{mask_password(url)}: not a Redis URL ({exc})") from None
        self._add = self.redis.register_script(ADD)
        self._lease = self.redis.register_script(LEASE)
        self._end = self.redis.register_script(END)
        self._next_round = self.redis.register_script(NEXT_ROUND)
        self._seen = self.redis.register_script(SEEN)
        self._claim_new_run = self.redis.register_script(CLAIM_NEW_RUN)
        self._start_new_run = self.redis.register_script(START_NEW_RUN)
        self._down_since: float | None = None
        self._confirmed: set[str] = set()
        self._held: set[int] = set()
        self._records: dict[str, RedisRecords] = {}
        #: record writes not sent yet (webspider.frontier.redisrecords)
        self._writes = PendingWrites()
        self._round = 0
        self._pending_until = 0.0
        self._acks = 0
        self._last_commit = time.monotonic()
        self.bad_entries = 0
        #: the embedded state releases leases when it opens; here they expire
        self.released_on_open = 0
        #: False only to look before starting over (a state of another
        #: format is then deleted, not read)
        self._check_format_on_open = check_format
        if reach_within is not None:
            self._reach(reach_within)
        if fresh:
            self._delete_all()
        self._open()

    # -- talking to Redis ---------------------------------------------------------
    def _reach(self, seconds: float) -> None:
        """Redis answers within ``seconds`` (tried again with backoff), else
        StateError. Any other error is left to the first call."""
        deadline = time.monotonic() + seconds
        delay = 0.1
        while True:
            try:
                self.redis.ping()
            except _TRANSIENT as exc:
                if time.monotonic() + delay > deadline:
                    raise StateError(
                        f"{self.where}: Redis does not answer ({type(exc).__name__}) "
                        f"after {seconds:g} s; start redis-server there, or correct "
                        "WEBSPIDER_STATE"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            except redis.RedisError:
                pass  # it answered (a password refused, …): the first call says so
            return

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args)`` after the pending record writes (in the order this
        worker made them), waiting for Redis while it is away. One of this
        state's scripts goes in the same MULTI as the writes (one round
        trip, not two: a page's records are usually pending when the next
        page's links are checked)."""
        if self._writes.builds:
            if isinstance(fn, Script) and not args and kwargs.keys() <= {"args"}:
                # this state registers its scripts as text
                script, script_args = cast("str", fn.script), kwargs.get("args") or []

                def run(pipe: redis.client.Pipeline) -> None:
                    # EVAL, not EVALSHA: a pipeline would first ask whether
                    # the script is loaded, a round trip of its own
                    pipe.eval(script, 0, *script_args)

                return self._pipelined(run)[-1]
            self._pipelined(nothing_more)
        return self._retry(fn, *args, **kwargs)

    def _pipelined(self, last: Callable[[redis.client.Pipeline], object]) -> list[Any]:
        """The pending record writes and then ``last``'s commands, in one
        MULTI: one round trip (webspider.frontier.redisrecords). Their
        replies."""
        builds = self._writes.take()

        def run() -> list[Any]:
            # a pipeline forgets its commands when it fails: built per attempt
            pipe = self.redis.pipeline(transaction=True)
            for build in builds:
                build(pipe)
            last(pipe)
            return pipe.execute()

        result: list[Any] = self._retry(run)
        return result

    def _retry(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args)``, waiting for Redis with backoff while it is away."""
        delay = 0.1
        while True:
            try:
                result = fn(*args, **kwargs)
            except _TRANSIENT as exc:
                if self._down_since is None:
                    self._down_since = time.monotonic()
                    logger.warning(
                        "Redis at %s unreachable (%s); waiting for it",
                        self.where,
                        type(exc).__name__,
                    )
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            except redis.RedisError as exc:  # refused: a password, a command, …
                message = str(exc)
                if self._password:
                    message = message.replace(self._password, "***")
                if message.startswith("WRONGTYPE"):
                    # a key of the crawl's replaced by another kind: damaged
                    raise StateError(f"{self.where}: {message}") from None
                # refused, not damaged: met while the crawl runs, it stops it
                # resumable (webspider.storage), as a full disk does
                raise StateRefused(
                    f"{self.where}: {type(exc).__name__}: {message}",
                    "see what Redis answered",
                ) from None
            if self._down_since is not None:
                away = time.monotonic() - self._down_since
                self._down_since = None
                logger.warning("Redis at %s is back after %.1f s", self.where, away)
                if self._check_format_on_open:
                    self._check_format()
            return result

    def _key(self, name: str) -> str:
        return self.prefix + name

    def _open(self) -> None:
        if self._check_format_on_open:
            damaged = self._call(self.redis.get, self._key("damaged"))
            if damaged is not None:
                found = damaged.decode("utf-8", "replace")
                raise StateError(f"{self.where}: {damaged_refusal(found)}")
        self._call(self.redis.hsetnx, self._key("meta"), META_FORMAT, str(FORMAT))
        if self._check_format_on_open:
            self._check_format()
        self._round = int(self._call(self.redis.hget, self._key("meta"), "round") or 0)

    def _check_format(self) -> None:
        raw = self.redis.hget(self._key("meta"), META_FORMAT)
        if raw is None:
            raise self._gone()
        version = raw.decode() if isinstance(raw, bytes) else str(raw)
        if version != str(FORMAT):
            raise StateError(
                f"{self.where}: crawl state of format {version}, this "
                f"webspider reads format {FORMAT}: finish that crawl with the "
                "webspider that started it, or start over with -a restart=1"
            )

    def _gone(self) -> StateError:
        return StateError(
            f"{self.where}: the crawl state is gone (Redis restarted without "
            "persistence, or the keys were deleted)"
        )

    def _delete_all(
        self, keep: tuple[str, ...] = (), each: Callable[[], Any] | None = None
    ) -> None:
        # the name is checked to hold no glob characters (webspider.frontier.options)
        pattern = self.prefix.replace("[", "\\[").replace("]", "\\]") + "*"
        kept = {self._key(name).encode() for name in keep}
        batch: list[bytes] = []
        for key in self._call(self.redis.scan_iter, match=pattern, count=1000):
            if key in kept:
                continue
            batch.append(key)
            if len(batch) >= 1000:
                self._call(self.redis.unlink, *batch)
                batch = []
                if each is not None:
                    each()
        if batch:
            self._call(self.redis.unlink, *batch)

    def new_run_if_finished(self) -> bool:
        """Empty the crawl for its next run when the last one finished (the
        update crawl): True for the one worker that did. Workers started
        together agree through an atomic claim (``newrun``, SET with a time
        to live): the others wait until it is empty, then join the new run,
        so nothing they add is deleted after them. A worker that dies while
        emptying leaves the crawl finished, and another takes the claim
        when it expires."""
        token = f"{self.token}#{uuid.uuid4().hex[:8]}"
        ttl = int(_NEW_RUN_TTL * 1000)
        waited = False
        while True:
            claim = int(self._call(self._claim_new_run, args=[self.prefix, token, ttl]))
            if claim == 0:
                break
            if claim == 2:
                if not waited:
                    waited = True
                    logger.info(
                        "Waiting for another worker to empty the finished crawl "
                        "%s for its next run",
                        self.where,
                    )
                time.sleep(0.1)
                continue

            def keep_claim() -> None:
                self._call(self.redis.pexpire, self._key("newrun"), ttl)

            self._delete_all(keep=("meta", "newrun"), each=keep_claim)
            if int(self._call(self._start_new_run, args=[self.prefix, token])):
                self._round = 0
                self._confirmed.clear()
                return True
        self._round = int(self._call(self.redis.hget, self._key("meta"), "round") or 0)
        return False

    # -- the seen-set -------------------------------------------------------------
    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return self.contains_many([key])[0]

    def __len__(self) -> int:
        c = self.counts()
        return c.queued + c.leased + c.done

    def contains_many(self, keys: Sequence[str]) -> list[bool]:
        confirmed = self._confirmed
        answers = [key in confirmed for key in keys]
        args: list[Any] = [self.prefix]
        asked = []
        for i, key in enumerate(keys):
            if not answers[i]:
                asked.append(i)
                args.append(seen_fingerprint(key))
        if not asked:
            return answers
        found = self._call(self._seen, args=args)
        for i, hit in zip(asked, found, strict=True):
            if hit:
                answers[i] = True
                self._confirm(keys[i])
        return answers

    def _confirm(self, key: str) -> None:
        if len(self._confirmed) >= _CONFIRMED_MAX:
            self._confirmed.clear()
        self._confirmed.add(key)

    # -- the queue ------------------------------------------------------------------
    def add(self, requests: Sequence[StoredRequest]) -> list[bool]:
        return [bool(x) for x in self._put(requests, "q")]

    def add_codes(self, requests: Sequence[StoredRequest]) -> list[int]:
        """``add``, telling per request 0 (seen), 1 (new) or 2 (new here, and
        taken out of the deferred frontier): one round trip."""
        return self._put(requests, "q")

    def defer(self, requests: Sequence[StoredRequest]) -> list[bool]:
        return [bool(x) for x in self._put(requests, "f")]

    def _put(self, requests: Sequence[StoredRequest], mode: str) -> list[int]:
        if not requests:
            return []
        args: list[Any] = [self.prefix, mode]
        for r in requests:
            data = r.to_json()
            args += [
                seen_fingerprint(r.key),
                r.origin,
                r.key,
                json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                r.depth,
                r.round,
                r.priority,
            ]
        result = self._call(self._add, args=args)
        if mode == "q":
            self._pending_until = 0.0
        return [int(x) for x in result]

    # -- leases ---------------------------------------------------------------------
    def lease(
        self,
        n: int,
        *,
        deadline: float,
        strict: bool = True,
        max_depth: int | None = None,
        skip_origins: Iterable[str] = (),
    ) -> list[Lease]:
        args = [
            self.prefix,
            n,
            repr(deadline),
            1 if strict else 0,
            -1 if max_depth is None else max_depth,
            self.token,
            *skip_origins,
        ]
        raw, bad, round_ = self._call(self._lease, args=args)
        self._round = int(round_)
        for i in range(0, len(bad), 2):
            self._reject(bad[i], bad[i + 1], "in the queue")
        leases = []
        dropped = []
        for i in range(0, len(raw), 4):
            ticket = int(raw[i])
            request = self._request(raw[i + 3], int(raw[i + 1]), int(raw[i + 2]))
            if request is None:
                self._reject(raw[i], raw[i + 3][:80], "in a queued request")
                dropped.append(ticket)
                continue
            leases.append(Lease(ticket, request, deadline))
            self._held.add(ticket)
        if dropped:
            self._call(self._end, args=[self.prefix, "a", "", *dropped])
        return leases

    def _request(self, raw: bytes, depth: int, round_: int) -> StoredRequest | None:
        """The request stored as ``raw`` (JSON), or None when it is not one."""
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                return None
            request = StoredRequest.from_json(data)
            fields = (request.key, request.url, request.kind, request.method)
            if not all(isinstance(f, str) for f in fields):
                return None
            if request.referer is not None and not isinstance(request.referer, str):
                return None
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return StoredRequest(
            key=request.key,
            url=request.url,
            depth=depth,
            round=round_,
            referer=request.referer,
            kind=request.kind,
            priority=request.priority,
            method=request.method,
            meta=request.meta,
        )

    def _reject(self, member: bytes, head: bytes, where: str) -> None:
        self.bad_entries += 1
        if self.bad_entries <= _BAD_LOGGED:
            logger.warning(
                "Dropped an entry %s of %s that is not webspider data (never "
                "unpickled nor run): %r, starting %r",
                where,
                self.where,
                member[:40],
                head[:40],
            )

    def ack(self, tickets: Iterable[int]) -> None:
        self._end_leases(tickets, "a")

    def release(self, tickets: Iterable[int]) -> None:
        self._end_leases(tickets, "r")

    def _end_leases(self, tickets: Iterable[int], mode: str) -> None:
        tickets = list(tickets)
        if not tickets:
            return
        owner = self.token if mode == "r" else ""
        self._call(self._end, args=[self.prefix, mode, owner, *tickets])
        self._held.difference_update(tickets)
        self._acks += len(tickets)
        self._pending_until = 0.0

    def renew(self, tickets: Iterable[int], deadline: float) -> None:
        tickets = list(tickets)
        if tickets:
            mapping: dict[Any, float] = {ticket: deadline for ticket in tickets}
            self._call(self.redis.zadd, self._key("L"), mapping, xx=True)

    def expire(self, now: float) -> int:
        return int(self._call(self._end, args=[self.prefix, "x", "", repr(now)]))

    def release_all(self) -> int:
        self._held.clear()
        return int(self._call(self._end, args=[self.prefix, "A", ""]))

    def leased_depths(self, origin: str) -> list[int]:
        raw = self._call(self.redis.hgetall, self._key(f"ld:{origin}"))
        return sorted(int(d) for d, c in raw.items() for _ in range(int(c)))

    @property
    def held(self) -> set[int]:
        """The tickets this worker holds (not acknowledged or released yet)."""
        return self._held

    def pending(self) -> bool:
        """Whether anything is queued or leased by any worker: the crawl is
        not over while another worker holds leases (they may come back, or
        bring new links). Only a "yes" is cached, and briefly."""
        if time.monotonic() < self._pending_until:
            return True

        def sizes() -> list[int]:
            pipe = self.redis.pipeline(transaction=False)
            pipe.zcard(self._key("o"))
            pipe.zcard(self._key("L"))
            return pipe.execute()

        origins, leases = self._call(sizes)
        if origins or leases:
            self._pending_until = time.monotonic() + _PENDING_TTL
            return True
        return False

    # -- deferred frontier and rounds ----------------------------------------------
    def deferred_round(self, key: str) -> int | None:
        rid = self._call(self.redis.hget, self._key("dk"), key)
        if rid is None:
            return None
        raw = self._call(self.redis.hget, self._key("r"), rid)
        head = raw[SEEN_FP_BYTES:].split(b":", 2) if raw else []
        try:
            return int(head[1])
        except (IndexError, ValueError):
            return None

    def iter_deferred(self) -> Iterator[StoredRequest]:
        last = "-inf"
        while True:
            ids = self._call(
                self.redis.zrangebyscore, self._key("d"), last, "+inf", start=0, num=500
            )
            if not ids:
                return
            raws = self._call(self.redis.hmget, self._key("r"), ids)
            for raw in raws:
                request = self._deferred(raw) if raw else None
                if request is not None:
                    yield request
            last = f"({int(ids[-1])}"

    def _deferred(self, raw: bytes) -> StoredRequest | None:
        head, _, body = raw[SEEN_FP_BYTES:].partition(b"\n")
        try:
            depth, round_ = (int(x) for x in head.split(b":", 3)[:2])
        except ValueError:
            return None
        return self._request(body, depth, round_)

    @property
    def round(self) -> int:
        return self._round

    def next_round(self) -> int:
        new, moved = self._call(self._next_round, args=[self.prefix, self._round])
        self._round = int(new)
        self._pending_until = 0.0
        return int(moved)

    def _counters(self) -> list[int]:
        raw = self._call(
            self.redis.hmget, self._key("n"), ["queued", "leased", "done", "deferred"]
        )
        return [int(x or 0) for x in raw]

    @property
    def queued(self) -> int:
        return self._counters()[0]

    @property
    def deferred(self) -> int:
        return self._counters()[3]

    def counts(self) -> Counts:
        queued, leased, done, deferred = self._counters()
        return Counts(queued=queued, leased=leased, done=done, deferred=deferred)

    # -- metadata and outputs --------------------------------------------------------
    def get_meta(self, name: str) -> str | None:
        raw = self._call(self.redis.hget, self._key("meta"), name)
        return None if raw is None else str(raw.decode())

    def set_meta(self, name: str, value: str) -> None:
        if name == META_FINISHED:
            # a state whose keys were deleted is never marked finished (the
            # next run would take it for a finished crawl to start again)
            self.commit()
        self._call(self.redis.hset, self._key("meta"), name, value)

    def get_offset(self, output: str) -> int:
        # each worker writes its own files: its offsets are its own
        return int(self.get_meta(f"offset:{self.worker}:{output}") or 0)

    def set_offset(self, output: str, offset: int) -> None:
        self.set_meta(f"offset:{self.worker}:{output}", str(offset))

    # -- records (webspider.records) ---------------------------------------------------
    def records(self, name: str) -> RedisRecords:
        """The namespace of records ``name`` (webspider.frontier.redisrecords):
        written when the call returns, shared by every worker."""
        found = self._records.get(name)
        if found is None:
            found = RedisRecords(
                self.redis,
                self._call,
                self.prefix,
                name,
                writes=self._writes,
                pipelined=self._pipelined,
            )
            self._records[name] = found
        return found

    # -- durability --------------------------------------------------------------------
    def commit(self) -> None:
        # every call is applied when it returns (record writes with the next
        # call, sent here if none came); Redis' persistence settings
        # (appendonly, appendfsync) decide what survives a Redis restart.
        # The state's format is read in the same round trip: a state whose
        # keys were deleted while Redis stayed up (a FLUSHALL, a DEL) would
        # otherwise be taken for an empty queue, and the crawl for finished
        meta = self._key("meta")
        replies = self._pipelined(lambda pipe: pipe.hget(meta, META_FORMAT))
        if replies[-1] is None:
            raise self._gone()
        self._last_commit = time.monotonic()
        self._acks = 0

    def commit_due(self) -> bool:
        return (
            self.commit_acks is not None and self._acks >= self.commit_acks
        ) or time.monotonic() - self._last_commit >= self.commit_interval

    def mark_damaged(self, error: str) -> None:
        """Leave the mark of a state found damaged while the crawl ran (its
        ``error``) for every worker: the next run is refused (its keys may
        be gone, and it would start over without a word). Best effort."""
        with contextlib.suppress(redis.RedisError):
            self.redis.set(self._key("damaged"), error)

    def abandon(self) -> None:
        """Disconnect without sending the pending record writes, putting
        back the leases this worker holds: a write the disk refused stopped
        its crawl (webspider.storage), and what it did since its last
        commit is done again (by whichever worker leases those requests)."""
        self._writes.take()
        with contextlib.suppress(StateError):
            if self._held:
                self.release(list(self._held))
        self.redis.close()

    def close(self) -> None:
        """Send the pending record writes, put back the leases this worker
        holds, and disconnect."""
        with contextlib.suppress(StateError):
            if self._writes.builds:
                self._pipelined(nothing_more)
            if self._held:
                self.release(list(self._held))
        self.redis.close()
