"""Politeness shared by the workers of one crawl, kept in Redis.

Per origin (``scheme://host:port``), under a key prefix:

- ``robots:<origin>``: the robots.txt record (JSON text, see
  webspider.politeness.robotsstore), expiring with the rules' cache time;
- ``robots-claim:<origin>``: the worker fetching it now (a token), expiring
  after the claim timeout unless renewed — a worker that dies holding it
  lets the next one fetch;
- ``last:<origin>``: when the latest start reserved at the origin is (Redis
  server time, seconds); the next start is reserved at ``last + delay`` or
  later, the delay being what the asking worker knows (Crawl-delay,
  DOWNLOAD_DELAY), so a robots.txt fetched before its Crawl-delay was
  known still spaces the first page after it;
- ``started:<origin>``: when the latest request actually started there
  (server time): a reserved start is confirmed when its wait is over
  (``go``), and pushed back when the start before it went late — a worker
  busy elsewhere, a loaded machine — so the gaps between the starts made,
  not only between those reserved, are at least the delay;
- ``pause:<origin>``: when a Retry-After pause ends (server time);
- ``busy:<origin>``: the requests in flight, a sorted set of lease tokens
  scored by when their lease runs out; a lease is renewed while its worker
  lives, so a killed worker's places come free after the lease timeout.

All times are the Redis server's own clock (``TIME`` inside the scripts):
workers on several machines need no synchronised clocks, and each decision
that reads and writes several keys is one Lua script, atomic.

Only the standard library and redis-py; errors of the connection are the
caller's to handle (webspider.politeness.shared).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from redis import Redis

DEFAULT_PREFIX = "webspider:politeness:"

#: answers of ``robots_claim``
RECORD = "record"
CLAIMED = "claimed"
WAIT = "wait"

#: answers of ``turn`` and ``go`` (``go`` also answers WAIT)
GO = "go"
BUSY = "busy"
PAUSED = "paused"

#: how long ``last:`` outlives the start it records (longer than any delay)
KEEP_LAST_MS = 3600 * 1000

_ROBOTS_CLAIM = """
local record = redis.call('GET', KEYS[1])
if record then
  return {1, record, redis.call('PTTL', KEYS[1])}
end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {2}
end
return {0}
"""

_ROBOTS_PUT = """
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[3] then
  redis.call('DEL', KEYS[2])
end
return 1
"""

_UNCLAIM = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

_RENEW_CLAIM = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

#: a script's answer while the origin's pause (KEYS[2]) lasts
_PAUSED = """
local pause = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if pause > now then
  return {'paused', string.format('%.6f', pause - now)}
end
"""

#: places given back first: KEYS[5…] busy keys, ARGV[6…] their tokens
_RELEASE = """
for i = 5, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[i + 1])
end
"""

# KEYS: last, pause, busy, started, then busy keys of places given back;
# ARGV: delay (s), limit (0: none), lease (ms), token, keep (ms), then the
# tokens of the places given back
_TURN = (
    _RELEASE
    + _NOW
    + _PAUSED
    + """
local limit = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
if limit > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', string.format('%.6f', now))
  if redis.call('ZCARD', KEYS[3]) >= limit then
    return {'busy', '0'}
  end
  redis.call('ZADD', KEYS[3], string.format('%.6f', now + lease / 1000), ARGV[4])
  redis.call('PEXPIRE', KEYS[3], 2 * lease)
end
local delay = tonumber(ARGV[1])
local start = now
local last = tonumber(redis.call('GET', KEYS[1]) or '')
if last and delay > 0 and last + delay > now then
  start = last + delay
elseif last and last > now then
  -- a start reserved further ahead by a worker that knows a longer delay
  start = last
end
redis.call('SET', KEYS[1], string.format('%.6f', start), 'PX',
  math.floor((start - now) * 1000) + tonumber(ARGV[5]))
if start == now then
  redis.call('SET', KEYS[4], string.format('%.6f', now), 'PX', ARGV[5])
end
return {'go', string.format('%.6f', start - now)}
"""
)

# a reserved start, once waited for. KEYS: started, pause, last; ARGV: delay
# (s), keep (ms)
_GO = (
    _NOW
    + _PAUSED
    + """
local delay = tonumber(ARGV[1])
local started = tonumber(redis.call('GET', KEYS[1]) or '')
if started and delay > 0 and started + delay > now then
  return {'wait', string.format('%.6f', started + delay - now)}
end
redis.call('SET', KEYS[1], string.format('%.6f', now), 'PX', ARGV[2])
local last = tonumber(redis.call('GET', KEYS[3]) or '')
if not last or last < now then
  redis.call('SET', KEYS[3], string.format('%.6f', now), 'PX', ARGV[2])
end
return {'go', '0'}
"""
)

_PAUSED_FOR = (
    _NOW
    + """
local pause = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if pause > now then
  return string.format('%.6f', pause - now)
end
return '0'
"""
)

_PAUSE = (
    _NOW
    + """
local seconds = tonumber(ARGV[1])
local ends = now + seconds
local current = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if ends <= current then
  return 0
end
redis.call('SET', KEYS[1], string.format('%.6f', ends), 'PX',
  math.floor(seconds * 1000) + 1000)
return 1
"""
)

# KEYS: busy; ARGV: token, lease (ms)
_RENEW_LEASE = (
    _NOW
    + """
return redis.call('ZADD', KEYS[1], 'XX', 'CH',
  string.format('%.6f', now + tonumber(ARGV[2]) / 1000), ARGV[1])
"""
)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisPoliteness:
    """The shared politeness records of one crawl (see module docstring)."""

    def __init__(self, client: Redis, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self._claim = client.register_script(_ROBOTS_CLAIM)
        self._put = client.register_script(_ROBOTS_PUT)
        self._unclaim = client.register_script(_UNCLAIM)
        self._renew_claim = client.register_script(_RENEW_CLAIM)
        self._turn = client.register_script(_TURN)
        self._go = client.register_script(_GO)
        self._paused_for = client.register_script(_PAUSED_FOR)
        self._pause = client.register_script(_PAUSE)
        self._renew_lease = client.register_script(_RENEW_LEASE)

    def key(self, kind: str, origin: str) -> str:
        return f"{self.prefix}{kind}:{origin}"

    # -- robots.txt ---------------------------------------------------------------
    def robots_claim(
        self, origin: str, token: str, timeout: float
    ) -> tuple[str, bytes | None, float]:
        """(RECORD, the stored record, seconds it stays fresh) when one is
        stored; else (CLAIMED, None, 0) when this caller may fetch it now (the
        claim lasts ``timeout`` unless renewed), or (WAIT, None, 0): another
        worker is fetching it."""
        keys = [self.key("robots", origin), self.key("robots-claim", origin)]
        answer = self._claim(keys=keys, args=[token, _ms(timeout)])
        if answer[0] == 1:
            pttl = int(answer[2])
            return RECORD, bytes(answer[1]), max(0.0, pttl / 1000) if pttl > 0 else 0.0
        return (CLAIMED if answer[0] == 2 else WAIT), None, 0.0

    def robots_put(self, origin: str, record: str, ttl: float, token: str) -> None:
        """Store ``record`` for ``ttl`` seconds and drop the caller's claim."""
        keys = [self.key("robots", origin), self.key("robots-claim", origin)]
        self._put(keys=keys, args=[record, _ms(ttl), token])

    def robots_unclaim(self, origin: str, token: str) -> None:
        """Give the claim up without a record (the next worker fetches)."""
        self._unclaim(keys=[self.key("robots-claim", origin)], args=[token])

    def robots_forget(self, origin: str) -> None:
        """Drop a stored record (one that could not be read)."""
        self.client.delete(self.key("robots", origin))

    # -- starts, places and pauses ------------------------------------------------
    def turn(
        self,
        origin: str,
        token: str,
        *,
        delay: float,
        limit: int,
        lease_timeout: float,
        release: Iterable[tuple[str, str]] = (),
    ) -> tuple[str, float]:
        """Ask for the next start at ``origin``: (GO, seconds to wait before
        starting) with a place held under ``token`` (when ``limit``), (BUSY,
        0) when ``limit`` requests are in flight, or (PAUSED, seconds left).
        The places ``release`` ((origin, token) pairs, of requests that left
        the downloader) are given back first, in the same round trip."""
        keys = [
            self.key("last", origin),
            self.key("pause", origin),
            self.key("busy", origin),
            self.key("started", origin),
        ]
        args: list[str | int] = [
            repr(float(delay)),
            limit,
            _ms(lease_timeout),
            token,
            KEEP_LAST_MS,
        ]
        for given_back, held in release:
            keys.append(self.key("busy", given_back))
            args.append(held)
        verdict, seconds = self._turn(keys=keys, args=args)
        return _text(verdict), float(seconds)

    def go(self, origin: str, delay: float) -> tuple[str, float]:
        """Start now the request whose start ``turn`` reserved and that
        waited for it: (GO, 0), recorded as the origin's latest start; (WAIT,
        seconds) when the latest start made is less than ``delay`` ago (one
        before it went late); (PAUSED, seconds left) in a pause."""
        keys = [
            self.key("started", origin),
            self.key("pause", origin),
            self.key("last", origin),
        ]
        verdict, seconds = self._go(keys=keys, args=[repr(float(delay)), KEEP_LAST_MS])
        return _text(verdict), float(seconds)

    def paused_for(self, origin: str) -> float:
        """Seconds left of the origin's pause (0: none)."""
        return float(self._paused_for(keys=[self.key("pause", origin)]))

    def pause(self, origin: str, seconds: float) -> bool:
        """Start nothing at ``origin`` for ``seconds`` (a pause that ends
        later is kept); whether this one extended it."""
        answer = self._pause(keys=[self.key("pause", origin)], args=[repr(seconds)])
        return bool(answer)

    def release(self, origin: str, token: str) -> None:
        """The request holding ``token`` left the downloader."""
        self.client.zrem(self.key("busy", origin), token)

    def release_many(self, places: Iterable[tuple[str, str]]) -> None:
        """``release`` of every (origin, token) pair, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for origin, token in places:
            pipe.zrem(self.key("busy", origin), token)
        pipe.execute()

    def in_flight(self, origin: str) -> int:
        """Places held now (expired leases included until the next turn)."""
        return int(self.client.zcard(self.key("busy", origin)))

    def renew(
        self,
        claims: Iterable[tuple[str, str]],
        leases: Iterable[tuple[str, str]],
        timeout: float,
    ) -> None:
        """Keep the caller's robots.txt claims and places for another
        ``timeout`` seconds (those that already ran out stay given up)."""
        ms = _ms(timeout)
        pipe = self.client.pipeline(transaction=False)
        for origin, token in claims:
            self._renew_claim(
                keys=[self.key("robots-claim", origin)], args=[token, ms], client=pipe
            )
        for origin, token in leases:
            self._renew_lease(
                keys=[self.key("busy", origin)], args=[token, ms], client=pipe
            )
        pipe.execute()
