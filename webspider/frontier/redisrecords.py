"""Records (webspider.records) in the Redis crawl state.

Layout, under the crawl's prefix (webspider.frontier.redisscripts)::

    R:<name>:v   hash   key → value (JSON text)
    R:<name>:k   zset   the keys, all of score 0: ZRANGEBYLEX reads them in
                        byte order, which for UTF-8 is code point order

The sorted set is what lets ``items(prefix)`` stream a namespace in key
order a page at a time (a hash has no order, and HSCAN would load and sort
it whole). Writes that touch both keys are one Lua script or one MULTI, so
a worker killed at any moment leaves the two in step.

Writes that answer nothing (``put``, ``put_many``, ``delete``,
``delete_prefix``) are not a round trip each: they wait in the worker's
``PendingWrites`` and go, in one MULTI, with its next call to Redis — a
records read, ``incr`` or ``put_new`` carries them in the same round trip,
any other call (a lease, an ack, the seen-set) sends them first
(webspider.frontier.redisstate), and so does ``commit``. So this worker
reads its own writes, its calls reach Redis in the order it made them (a
page's records before its ack), and other workers see them at its next
call, a moment later (at the latest its next commit, about a second). A
page's records cost a round trip per read rather than per read and write:
the reports' ledgers read and write a record for many links of each page.
Writes are applied when sent, not with the acks as in the embedded state
(webspider.frontier.sqliterecords). A worker killed after writing a page's
records but before its ack reached Redis leaves them written; the page's
lease then expires and another worker fetches the page again and writes
its records once more. So the features' record writers must be
idempotent (``put`` of the same value, ``put_new``, ledgers keyed on
"<url>\\n<referrer>"); an ``incr`` per page would count that page twice.

Values are JSON only: a value that does not parse (a pickle pushed by
someone else, a stray string) is dropped from the answer and logged, never
unpickled or evaluated.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from webspider.records import check_bits, flagged

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    import redis

logger = logging.getLogger(__name__)

#: records read per round trip while iterating
_PAGE = 512
#: keys looked up or written in one round trip
_BATCH = 1000
#: bad values logged one by one before the rest are only counted
_BAD_LOGGED = 10

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

#: KEYS: values, keys. ARGV: key, value. 1 when put.
PUT_NEW = r"""
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('ZADD', KEYS[2], 0, ARGV[1])
  return 1
end
return 0
"""

#: KEYS: values, keys. ARGV: key, value, key, value, … Per key 1 when put.
PUT_NEW_MANY = r"""
local out = {}
for i = 1, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('ZADD', KEYS[2], 0, ARGV[i])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
"""

#: KEYS: values, keys. ARGV: min, max (ZRANGEBYLEX forms). Deletes the
#: keys in that range (the values too, JSON or not). Returns how many.
DELETE_RANGE = r"""
local n = 0
while true do
  local keys = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', 0, 1000)
  if #keys == 0 then return n end
  redis.call('HDEL', KEYS[1], unpack(keys))
  redis.call('ZREM', KEYS[2], unpack(keys))
  n = n + #keys
end
"""

#: KEYS: values, keys. ARGV: min, max (ZRANGEBYLEX forms), count.
#: Returns key, value, key, value, … (a key deleted meanwhile is left out).
PAGE = r"""
local keys = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', 0, ARGV[3])
local out = {}
if #keys == 0 then return out end
local values = redis.call('HMGET', KEYS[1], unpack(keys))
for i, k in ipairs(keys) do
  if values[i] then
    out[#out + 1] = k
    out[#out + 1] = values[i]
  end
end
out[#out + 1] = keys[#keys]
return out
"""


#: KEYS: values, keys. ARGV: key, bits, value or "", … Flagged records
#: (webspider.records): the value is JSON text of a string, its second byte
#: the flags (ASCII). Sets the bits; the text too when a value is given.
FLAG_MANY = r"""
for i = 1, #ARGV, 3 do
  local key, new = ARGV[i], ARGV[i + 2]
  local old = redis.call('HGET', KEYS[1], key)
  local flags, rest = 0, '"'
  if old then
    flags = string.byte(old, 2) - 48
    rest = string.sub(old, 3)
  else
    redis.call('ZADD', KEYS[2], 0, key)
  end
  if new ~= '' then rest = string.sub(new, 3) end
  flags = bit.bor(flags, tonumber(ARGV[i + 1]))
  redis.call('HSET', KEYS[1], key, '"' .. string.char(48 + flags) .. rest)
end
return 0
"""

#: Clears the bits ``bits`` of the flagged records ``keys`` (deleted when
#: no flag is left). Lua, for UNFLAG and UNFLAG_RANGE.
_UNFLAG_KEYS = r"""
local function unflag(keys, bits)
  local values = redis.call('HMGET', KEYS[1], unpack(keys))
  for i, k in ipairs(keys) do
    local v = values[i]
    if v then
      local left = bit.band(string.byte(v, 2) - 48, bit.bnot(bits))
      if left == 0 then
        redis.call('HDEL', KEYS[1], k)
        redis.call('ZREM', KEYS[2], k)
      else
        local value = '"' .. string.char(48 + left) .. string.sub(v, 3)
        redis.call('HSET', KEYS[1], k, value)
      end
    end
  end
end
"""

#: KEYS: values, keys. ARGV: bits, key, key, …
UNFLAG = (
    _UNFLAG_KEYS
    + r"""
local keys = {}
for i = 2, #ARGV do keys[#keys + 1] = ARGV[i] end
if #keys > 0 then unflag(keys, tonumber(ARGV[1])) end
return 0
"""
)

#: KEYS: values, keys. ARGV: min, max (ZRANGEBYLEX forms), bits.
UNFLAG_RANGE = (
    _UNFLAG_KEYS
    + r"""
local low = ARGV[1]
while true do
  local keys = redis.call('ZRANGEBYLEX', KEYS[2], low, ARGV[2], 'LIMIT', 0, 1000)
  if #keys == 0 then return 0 end
  unflag(keys, tonumber(ARGV[3]))
  low = '(' .. keys[#keys]
end
"""
)


def nothing_more(pipe: redis.client.Pipeline) -> None:
    """For ``pipelined``: the pending writes alone."""


def _lex_range(prefix: str) -> tuple[bytes, bytes]:
    """ZRANGEBYLEX bounds of the keys starting with ``prefix``."""
    if not prefix:
        return b"-", b"+"
    raw = prefix.encode("utf-8", "surrogatepass")
    # 0xff never occurs in UTF-8: every key with the prefix sorts below it
    return b"[" + raw, b"(" + raw + b"\xff"


class PendingWrites:
    """A worker's record writes not sent yet (see the module docstring)."""

    __slots__ = ("builds", "items")

    def __init__(self) -> None:
        #: each adds its commands to the MULTI that sends them
        self.builds: list[Callable[[redis.client.Pipeline], object]] = []
        #: keys written, to send them before the MULTI grows large
        self.items = 0

    def take(self) -> list[Callable[[redis.client.Pipeline], object]]:
        builds = self.builds
        self.builds = []
        self.items = 0
        return builds


class RedisRecords:
    """One namespace of records (webspider.records.Records) on Redis.

    ``call`` runs a redis-py call, waiting while Redis is away, after the
    pending writes (the state's ``_call``); ``pipelined(last)`` sends the
    pending ``writes`` and then ``last``'s commands in one MULTI and returns
    its replies (the state's ``_pipelined``)."""

    __slots__ = (
        "_call",
        "_keys",
        "_pipelined",
        "_redis",
        "_values",
        "_writes",
        "name",
    )

    #: values that were not JSON, over every namespace of this process
    bad_values = 0

    def __init__(
        self,
        client: redis.Redis,
        call: Callable[..., Any],
        prefix: str,
        name: str,
        *,
        writes: PendingWrites,
        pipelined: Callable[[Callable[[redis.client.Pipeline], object]], list[Any]],
    ) -> None:
        self._redis = client
        self._call = call
        self._writes = writes
        self._pipelined = pipelined
        self.name = name
        self._values = f"{prefix}R:{name}:v"
        self._keys = f"{prefix}R:{name}:k"

    def _load(self, key: str | bytes, raw: bytes) -> tuple[bool, Any]:
        try:
            return True, json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            RedisRecords.bad_values += 1
            if RedisRecords.bad_values <= _BAD_LOGGED:
                logger.warning(
                    "Ignored a record of %s at %r that is not JSON (never "
                    "unpickled nor run): starting %r",
                    self.name,
                    key,
                    raw[:40],
                )
            return False, None

    def get(self, key: str) -> Any | None:
        raw = self._pipelined(lambda pipe: pipe.hget(self._values, key))[-1]
        return None if raw is None else self._load(key, raw)[1]

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        out: list[Any | None] = []
        for start in range(0, len(keys), _BATCH):
            chunk = list(keys[start : start + _BATCH])
            if not chunk:
                break

            def read(pipe: redis.client.Pipeline, chunk: list[str] = chunk) -> None:
                pipe.hmget(self._values, chunk)

            raws = self._pipelined(read)[-1]
            out += [
                None if raw is None else self._load(key, raw)[1]
                for key, raw in zip(chunk, raws, strict=True)
            ]
        return out

    def _write(self, build: Callable[[redis.client.Pipeline], None], keys: int) -> None:
        """Queue a write that answers nothing (sent with the next call)."""
        writes = self._writes
        writes.builds.append(build)
        writes.items += keys
        if writes.items >= _BATCH:
            self._pipelined(nothing_more)

    def put(self, key: str, value: Any) -> None:
        self.put_many([(key, value)])

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        # one MULTI: the namespace never has a value without its key
        mapping = {key: _dumps(value) for key, value in items}
        if not mapping:
            return

        def build(pipe: redis.client.Pipeline) -> None:
            pipe.hset(self._values, mapping=mapping)  # type: ignore[arg-type]
            pipe.zadd(self._keys, dict.fromkeys(mapping, 0))

        self._write(build, len(mapping))

    def put_new(self, key: str, value: Any) -> bool:
        value = _dumps(value)

        def build(pipe: redis.client.Pipeline) -> None:
            pipe.eval(PUT_NEW, 2, self._values, self._keys, key, value)

        return bool(self._pipelined(build)[-1])

    def put_new_many(self, items: Sequence[tuple[str, Any]]) -> list[bool]:
        out: list[bool] = []
        for start in range(0, len(items), _BATCH):
            args: list[str] = []
            for key, value in items[start : start + _BATCH]:
                args += [key, _dumps(value)]

            def build(pipe: redis.client.Pipeline, args: list[str] = args) -> None:
                pipe.eval(PUT_NEW_MANY, 2, self._values, self._keys, *args)

            out += [bool(x) for x in self._pipelined(build)[-1]]
        return out

    def incr(self, key: str, by: int = 1) -> int:
        def build(pipe: redis.client.Pipeline) -> None:
            pipe.hincrby(self._values, key, by)
            pipe.zadd(self._keys, {key: 0})

        return int(self._pipelined(build)[-2])

    def incr_many(self, counts: Mapping[str, int]) -> dict[str, int]:
        if not counts:
            return {}
        keys = list(counts)

        def build(pipe: redis.client.Pipeline) -> None:
            for key in keys:
                pipe.hincrby(self._values, key, counts[key])
            pipe.zadd(self._keys, dict.fromkeys(keys, 0))

        replies = self._pipelined(build)[-len(keys) - 1 : -1]
        return {key: int(n) for key, n in zip(keys, replies, strict=True)}

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for start in range(0, len(keys), _BATCH):
            chunk = keys[start : start + _BATCH]

            def build(pipe: redis.client.Pipeline, chunk: list[str] = chunk) -> None:
                pipe.hdel(self._values, *chunk)
                pipe.zrem(self._keys, *chunk)

            self._write(build, len(chunk))

    def delete_prefix(self, prefix: str) -> None:
        low, high = _lex_range(prefix)

        def build(pipe: redis.client.Pipeline) -> None:
            pipe.eval(DELETE_RANGE, 2, self._values, self._keys, low, high)

        self._write(build, 1)

    def flag_many(self, items: Iterable[tuple[str, int, str | None]]) -> None:
        args: list[str | int] = []
        for key, bits, text in items:
            check_bits(bits)
            args += [key, bits, "" if text is None else _dumps(flagged(bits, text))]
        for start in range(0, len(args), 3 * _BATCH):
            chunk = args[start : start + 3 * _BATCH]

            def build(
                pipe: redis.client.Pipeline, chunk: list[str | int] = chunk
            ) -> None:
                pipe.eval(FLAG_MANY, 2, self._values, self._keys, *chunk)

            self._write(build, len(chunk) // 3)

    def unflag(self, keys: Iterable[str], bits: int) -> None:
        check_bits(bits)
        keys = list(keys)
        for start in range(0, len(keys), _BATCH):
            chunk = keys[start : start + _BATCH]

            def build(pipe: redis.client.Pipeline, chunk: list[str] = chunk) -> None:
                pipe.eval(UNFLAG, 2, self._values, self._keys, bits, *chunk)

            self._write(build, len(chunk))

    def unflag_prefix(self, prefix: str, bits: int) -> None:
        check_bits(bits)
        low, high = _lex_range(prefix)

        def build(pipe: redis.client.Pipeline) -> None:
            pipe.eval(UNFLAG_RANGE, 2, self._values, self._keys, low, high, bits)

        self._write(build, 1)

    def unflag_prefixes(self, prefixes: Sequence[str], bits: int) -> None:
        # queued writes: sent together with the next call
        check_bits(bits)
        for prefix in prefixes:
            self.unflag_prefix(prefix, bits)

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        low, high = _lex_range(prefix)
        while True:

            def read(pipe: redis.client.Pipeline, low: bytes = low) -> None:
                pipe.eval(PAGE, 2, self._values, self._keys, low, high, _PAGE)

            page = self._pipelined(read)[-1]
            if not page:
                return
            for i in range(0, len(page) - 1, 2):
                key = page[i].decode("utf-8", "surrogatepass")
                ok, value = self._load(key, page[i + 1])
                if ok:
                    yield key, value
            # the next page starts after the last key read (records written
            # meanwhile after it are read too, as in the embedded state)
            low = b"(" + page[-1]

    def count(self, prefix: str = "") -> int:
        if not prefix:
            return int(self._call(self._redis.zcard, self._keys))
        low, high = _lex_range(prefix)
        return int(self._call(self._redis.zlexcount, self._keys, low, high))

    def clear(self) -> None:
        self._call(self._redis.delete, self._values, self._keys)
