"""Records (webspider.records) in the Redis crawl state.

Layout, under the crawl's prefix (webspider.frontier.redisscripts)::

    R:<name>:v   hash   key → value (JSON text)
    R:<name>:k   zset   the keys, all of score 0: ZRANGEBYLEX reads them in
                        byte order, which for UTF-8 is code point order

The sorted set is what lets ``items(prefix)`` stream a namespace in key
order a page at a time (a hash has no order, and HSCAN would load and sort
it whole). Writes that touch both keys are one Lua script or one MULTI, so
a worker killed at any moment leaves the two in step.

Writes are applied when the call returns, not with the acks as in the
embedded state (webspider.frontier.sqliterecords). A worker killed after
writing a page's records but before its ack reached Redis leaves them
written; the page's lease then expires and another worker fetches the page
again and writes its records once more. So the features' record writers
must be idempotent (``put`` of the same value, ``put_new``, ledgers keyed
on "<url>\\n<referrer>"); an ``incr`` per page would count that page twice.

Values are JSON only: a value that does not parse (a pickle pushed by
someone else, a stray string) is dropped from the answer and logged, never
unpickled or evaluated.
"""

from __future__ import annotations

import json
import logging
from itertools import islice
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

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


def _lex_range(prefix: str) -> tuple[bytes, bytes]:
    """ZRANGEBYLEX bounds of the keys starting with ``prefix``."""
    if not prefix:
        return b"-", b"+"
    raw = prefix.encode("utf-8", "surrogatepass")
    # 0xff never occurs in UTF-8: every key with the prefix sorts below it
    return b"[" + raw, b"(" + raw + b"\xff"


class RedisRecords:
    """One namespace of records (webspider.records.Records) on Redis.

    ``call`` runs a redis-py call, waiting while Redis is away (the state's
    ``_call``)."""

    __slots__ = ("_call", "_keys", "_page", "_put_new", "_redis", "_values", "name")

    #: values that were not JSON, over every namespace of this process
    bad_values = 0

    def __init__(
        self,
        client: redis.Redis,
        call: Callable[..., Any],
        prefix: str,
        name: str,
    ) -> None:
        self._redis = client
        self._call = call
        self.name = name
        self._values = f"{prefix}R:{name}:v"
        self._keys = f"{prefix}R:{name}:k"
        self._put_new = client.register_script(PUT_NEW)
        self._page = client.register_script(PAGE)

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
        raw = self._call(self._redis.hget, self._values, key)
        return None if raw is None else self._load(key, raw)[1]

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        out: list[Any | None] = []
        for start in range(0, len(keys), _BATCH):
            chunk = list(keys[start : start + _BATCH])
            if not chunk:
                break
            raws = self._call(self._redis.hmget, self._values, chunk)
            out += [
                None if raw is None else self._load(key, raw)[1]
                for key, raw in zip(chunk, raws, strict=True)
            ]
        return out

    def _write(self, build: Callable[[redis.client.Pipeline], None]) -> list[Any]:
        def run() -> list[Any]:
            # a pipeline forgets its commands when it fails: built per attempt
            pipe = self._redis.pipeline(transaction=True)
            build(pipe)
            return pipe.execute()

        result: list[Any] = self._call(run)
        return result

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

        self._write(build)

    def put_new(self, key: str, value: Any) -> bool:
        keys = [self._values, self._keys]
        return bool(self._call(self._put_new, keys=keys, args=[key, _dumps(value)]))

    def incr(self, key: str, by: int = 1) -> int:
        def build(pipe: redis.client.Pipeline) -> None:
            pipe.hincrby(self._values, key, by)
            pipe.zadd(self._keys, {key: 0})

        return int(self._write(build)[0])

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for start in range(0, len(keys), _BATCH):
            chunk = keys[start : start + _BATCH]

            def build(pipe: redis.client.Pipeline, chunk: list[str] = chunk) -> None:
                pipe.hdel(self._values, *chunk)
                pipe.zrem(self._keys, *chunk)

            self._write(build)

    def delete_prefix(self, prefix: str) -> None:
        while True:
            keys = [key for key, _ in islice(self.items(prefix), _BATCH)]
            if keys:
                self.delete(keys)
            if len(keys) < _BATCH:
                return

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        low, high = _lex_range(prefix)
        keys = [self._values, self._keys]
        while True:
            page = self._call(self._page, keys=keys, args=[low, high, _PAGE])
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
