"""The Lua scripts of the Redis crawl state (webspider.frontier.redisstate).

Every update that touches more than one key is one of these scripts, so it
is atomic: Redis runs a script alone, and a worker killed between two calls
leaves the state consistent. Keys are built from the crawl's prefix (ARGV[1],
``webspider:{<name>}:``); the braces put them in one hash slot.

Layout under the prefix (``n`` counters, ``meta`` names → values)::

    s:<hhhh>    hash   the seen-set, 65,536 buckets by the first 2 bytes of the
                       key's 96-bit fingerprint (12 bytes): field = its other
                       10 bytes, value = "" (buckets of up to 128 fields stay
                       listpacks: 14 bytes a URL, whatever the URL's length;
                       see webspider.frontier.redisstate for why 96 bits)
    r           hash   id → "<fp 12 bytes><depth>:<round>:<priority>:<origin>\\n<json>"
                       a queued, leased or deferred request
    q:<origin>  zset   queued ids (12-digit members) by depth*2048 + (1023 - priority):
                       depth first, higher priority first, then FIFO (members
                       of one score sort as strings)
    o           zset   origins with queued requests, by turn: the origin served
                       longest ago comes first
    l           hash   leased id → "<score>|<worker>|<origin>"
    L           zset   leased ids by deadline
    ld:<origin> hash   depth → how many of the origin's requests are leased
    d           zset   deferred ids, oldest first
    dk          hash   deferred key → id
    R:<name>:v, R:<name>:k   records (webspider.frontier.redisrecords)
    newrun      string the token of the worker emptying a finished crawl for
                       the next run (with a time to live: a worker that dies
                       doing it leaves the crawl finished, for another)
"""

from __future__ import annotations

_COMMON = r"""
local P = ARGV[1]
local N = P .. 'n'
-- the seen-set: a URL's 96-bit fingerprint (FP bytes) picks its bucket by
-- the first 2 bytes and is stored by the other 10 (the field; "" the value)
local FP = 12
local function bucket(fp)
  local b1, b2 = string.byte(fp, 1, 2)
  return P .. 's:' .. string.format('%02x%02x', b1, b2)
end
local function seen(fp)
  return redis.call('HEXISTS', bucket(fp), string.sub(fp, 3)) == 1
end
local function mark(fp)
  redis.call('HSET', bucket(fp), string.sub(fp, 3), '')
end
local function score(depth, pri)
  pri = tonumber(pri)
  if pri > 1023 then pri = 1023 elseif pri < -1024 then pri = -1024 end
  return tonumber(depth) * 2048 + (1023 - pri)
end
local function member(id)
  return string.format('%012d', tonumber(id))
end
local function turn()
  return tonumber(redis.call('HGET', N, 'turn') or '0')
end
local function enqueue(id, origin, sc)
  redis.call('ZADD', P .. 'q:' .. origin, sc, member(id))
  redis.call('ZADD', P .. 'o', 'NX', turn(), origin)
end
local HEADER = '^(%-?%d+):(%-?%d+):(%-?%d+):([^\n]*)\n'
"""

#: ARGV: prefix, "q" (queue) or "f" (defer), then 7 per request:
#: fp (FP bytes), origin, key, json, depth, round, priority.
#: Returns per request 0 (seen, or already deferred), 1 (new), 2 (was deferred).
ADD = (
    _COMMON
    + r"""
local defer = ARGV[2] == 'f'
local out = {}
local i = 3
while i <= #ARGV do
  local fp, origin, key, json = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local depth, round, pri = ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]
  i = i + 7
  local isseen = seen(fp)
  local did = nil
  if not isseen then did = redis.call('HGET', P .. 'dk', key) end
  if isseen or (defer and did) then
    out[#out + 1] = 0
  else
    local id = redis.call('HINCRBY', N, 'seq', 1)
    local head = fp .. depth .. ':' .. round .. ':' .. pri .. ':' .. origin .. '\n'
    redis.call('HSET', P .. 'r', id, head .. json)
    if defer then
      redis.call('ZADD', P .. 'd', id, id)
      redis.call('HSET', P .. 'dk', key, id)
      redis.call('HINCRBY', N, 'deferred', 1)
      out[#out + 1] = 1
    else
      if did then
        redis.call('HDEL', P .. 'dk', key)
        redis.call('ZREM', P .. 'd', did)
        redis.call('HDEL', P .. 'r', did)
        redis.call('HINCRBY', N, 'deferred', -1)
        out[#out + 1] = 2
      else
        out[#out + 1] = 1
      end
      mark(fp)
      enqueue(id, origin, score(depth, pri))
      redis.call('HINCRBY', N, 'queued', 1)
    end
  end
end
return out
"""
)

#: ARGV: prefix, n, deadline, strict (1/0), max depth (-1: none), worker,
#: then the origins to skip. Returns {leases, bad, round}: leases as
#: id, depth, round, json; bad entries as member, first bytes.
LEASE = (
    _COMMON
    + r"""
local n, deadline, strict = tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1'
local maxd, worker = tonumber(ARGV[5]), ARGV[6]
local skip = {}
for j = 7, #ARGV do skip[ARGV[j]] = true end
local round = redis.call('HGET', P .. 'meta', 'round') or '0'
local out, bad = {}, {}
if n <= 0 then return {out, bad, round} end
local origins = {}
for _, o in ipairs(redis.call('ZRANGE', P .. 'o', 0, n + #ARGV + 64)) do
  if not skip[o] then origins[#origins + 1] = o end
end
if #origins == 0 then return {out, bad, round} end
local function shallowest(o)
  local low = nil
  for _, d in ipairs(redis.call('HKEYS', P .. 'ld:' .. o)) do
    d = tonumber(d)
    if low == nil or d < low then low = d end
  end
  return low
end
local function take(o, limit)
  local qk = P .. 'q:' .. o
  local items = redis.call('ZRANGE', qk, 0, limit - 1, 'WITHSCORES')
  local low = shallowest(o)
  local got = 0
  for j = 1, #items, 2 do
    local m, sc = items[j], tonumber(items[j + 1])
    local depth = math.floor(sc / 2048)
    if maxd >= 0 and depth > maxd then break end
    if strict and low ~= nil and low < depth then break end
    redis.call('ZREM', qk, m)
    local id, v = nil, nil
    if string.match(m, '^%d+$') then
      id = tostring(tonumber(m))
      v = redis.call('HGET', P .. 'r', id)
    end
    local d, rd = nil, nil
    if v then d, rd = string.match(v, HEADER, FP + 1) end
    if not d then
      -- not an entry of ours: dropped, and reported to the worker
      bad[#bad + 1] = m
      bad[#bad + 1] = v and string.sub(v, 1, 80) or ''
      if v then
        redis.call('HDEL', P .. 'r', id)
        redis.call('HINCRBY', N, 'queued', -1)
      end
    else
      if low == nil then low = depth end
      redis.call('HSET', P .. 'l', id, tostring(sc) .. '|' .. worker .. '|' .. o)
      redis.call('ZADD', P .. 'L', deadline, id)
      redis.call('HINCRBY', P .. 'ld:' .. o, depth, 1)
      local nl = string.find(v, '\n', FP + 1, true)
      out[#out + 1] = id
      out[#out + 1] = d
      out[#out + 1] = rd
      out[#out + 1] = string.sub(v, nl + 1)
      got = got + 1
    end
  end
  if got > 0 then
    redis.call('HINCRBY', N, 'queued', -got)
    redis.call('HINCRBY', N, 'leased', got)
  end
  if redis.call('ZCARD', qk) == 0 then
    redis.call('ZREM', P .. 'o', o)
  elseif got > 0 then
    redis.call('ZADD', P .. 'o', 'XX', redis.call('HINCRBY', N, 'turn', 1), o)
  end
end
local progress = true
while #out / 4 < n and progress do
  progress = false
  local quota = math.max(1, math.floor((n - #out / 4) / #origins))
  for _, o in ipairs(origins) do
    if #out / 4 >= n then break end
    local before = #out
    take(o, math.min(quota, n - #out / 4))
    if #out > before then progress = true end
  end
end
return {out, bad, round}
"""
)

#: ARGV: prefix, mode ("a" ack, "r" release, "x" expire before ARGV[3],
#: "A" release all), owner ("" any), then the tickets. Returns how many ended.
END = (
    _COMMON
    + r"""
local mode, owner = ARGV[2], ARGV[3]
local function finish(id, release)
  local l = redis.call('HGET', P .. 'l', id)
  if not l then return 0 end
  local sc, w, o = string.match(l, '^([^|]*)|([^|]*)|(.*)$')
  if owner ~= '' and w ~= owner then return 0 end
  redis.call('HDEL', P .. 'l', id)
  redis.call('ZREM', P .. 'L', id)
  local depth = tostring(math.floor(tonumber(sc) / 2048))
  if redis.call('HINCRBY', P .. 'ld:' .. o, depth, -1) <= 0 then
    redis.call('HDEL', P .. 'ld:' .. o, depth)
  end
  redis.call('HINCRBY', N, 'leased', -1)
  if release then
    enqueue(id, o, tonumber(sc))
    redis.call('HINCRBY', N, 'queued', 1)
  else
    redis.call('HDEL', P .. 'r', id)
    redis.call('HINCRBY', N, 'done', 1)
  end
  return 1
end
local ended = 0
if mode == 'x' or mode == 'A' then
  local ids
  if mode == 'x' then
    local before = '(' .. ARGV[4]
    ids = redis.call('ZRANGEBYSCORE', P .. 'L', '-inf', before, 'LIMIT', 0, 10000)
  else
    ids = redis.call('ZRANGE', P .. 'L', 0, -1)
  end
  for _, id in ipairs(ids) do ended = ended + finish(id, true) end
else
  for j = 4, #ARGV do ended = ended + finish(ARGV[j], mode == 'r') end
end
return ended
"""
)

#: ARGV: prefix, the round the caller knows. Starts the next round once for
#: all workers: a caller that knows an older round gets {round, how many the
#: round it missed moved}. Returns {round, moved}.
NEXT_ROUND = (
    _COMMON
    + r"""
local cur = tonumber(redis.call('HGET', P .. 'meta', 'round') or '0')
if cur ~= tonumber(ARGV[2]) then
  return {cur, tonumber(redis.call('HGET', P .. 'meta', 'moved:' .. cur) or '0')}
end
local ids = redis.call('ZRANGE', P .. 'd', 0, -1)
if #ids == 0 then return {cur, 0} end
local new = cur + 1
local moved = 0
for _, id in ipairs(ids) do
  local v = redis.call('HGET', P .. 'r', id)
  local d, rd, pri, origin = nil, nil, nil, nil
  if v then d, rd, pri, origin = string.match(v, HEADER, FP + 1) end
  local ok, data = false, nil
  if d then
    local nl = string.find(v, '\n', FP + 1, true)
    ok, data = pcall(cjson.decode, string.sub(v, nl + 1))
  end
  if ok and type(data) == 'table' and type(data['key']) == 'string' then
    local key = data['key']
    redis.call('HDEL', P .. 'dk', key)
    local fp = string.sub(v, 1, FP)
    local isseen = seen(fp)
    if not isseen then
      mark(fp)
      local nl = string.find(v, '\n', FP + 1, true)
      local head = fp .. '0:' .. new .. ':' .. pri .. ':' .. origin .. '\n'
      redis.call('HSET', P .. 'r', id, head .. string.sub(v, nl + 1))
      enqueue(id, origin, score(0, pri))
      moved = moved + 1
    else
      redis.call('HDEL', P .. 'r', id)
    end
  else
    -- not an entry of ours: dropped (the lease script reports such entries)
    redis.call('HDEL', P .. 'r', id)
  end
end
redis.call('DEL', P .. 'd')
redis.call('HINCRBY', N, 'queued', moved)
redis.call('HSET', N, 'deferred', 0)
redis.call('HSET', P .. 'meta', 'round', new, 'moved:' .. new, moved)
return {new, moved}
"""
)


#: ARGV: prefix, token, time to live (ms). Returns 1: the caller empties the
#: finished crawl (it holds ``newrun``); 2: another worker is doing it, wait;
#: 0: the crawl is not finished (join it).
CLAIM_NEW_RUN = r"""
local P = ARGV[1]
if redis.call('EXISTS', P .. 'newrun') == 1 then return 2 end
if redis.call('HGET', P .. 'meta', 'finished') ~= '1' then return 0 end
redis.call('SET', P .. 'newrun', ARGV[2], 'PX', ARGV[3])
return 1
"""

#: ARGV: prefix, token. Ends the emptying of a finished crawl (the other keys
#: are deleted by then): the metadata of the next run, in one step. Returns
#: the new run, or 0 when the caller no longer held ``newrun``.
START_NEW_RUN = r"""
local P = ARGV[1]
local meta = P .. 'meta'
if redis.call('GET', P .. 'newrun') ~= ARGV[2] then return 0 end
local run = tonumber(redis.call('HGET', meta, 'run') or '0') + 1
local format = redis.call('HGET', meta, 'format')
redis.call('DEL', meta, P .. 'newrun')
redis.call('HSET', meta, 'format', format, 'run', run)
return run
"""


#: ARGV: prefix, then per key its fingerprint (FP bytes). Returns 1/0 per key.
SEEN = (
    _COMMON
    + r"""
local out = {}
for i = 2, #ARGV do
  out[#out + 1] = seen(ARGV[i]) and 1 or 0
end
return out
"""
)
