-- Reserves an amount on every budget line or on none.
-- KEYS[1] tenant expiry zset; KEYS[2] reservation hash (same hash tag)
-- ARGV now|'' , tenant key base, request id, amount, ttl us, retention ms, n,
--      then n times: scope, period (d|m), limit
-- returns {1, expired} granted; {0, expired, refusing line, remaining} refused;
--         {-1, expired} the id is in use
local now = now_us(ARGV[1])
local base = ARGV[2]
local expired = expire_due(KEYS[1], base .. 'res:', now, ARGV[6])
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {-1, expired}
end
local amount = tonumber(ARGV[4])
local n = tonumber(ARGV[7])
local keys = {}
for i = 1, n do
  local j = 8 + (i - 1) * 3
  local bk = base .. 'bud:' .. ARGV[j] .. ':' .. period_code(ARGV[j + 1], now)
  local v = redis.call('HMGET', bk, 'spent', 'rsv')
  local held = (tonumber(v[1]) or 0) + (tonumber(v[2]) or 0)
  local limit = tonumber(ARGV[j + 2])
  if held + amount > limit then
    return {0, expired, i, math.max(0, limit - held)}
  end
  keys[i] = bk
end
for _, bk in ipairs(keys) do
  redis.call('HINCRBY', bk, 'rsv', ARGV[4])
  redis.call('PEXPIRE', bk, keep_ms(bk))
end
local expires = int(now + tonumber(ARGV[5]))
redis.call('HSET', KEYS[2], 'st', 'a', 'amt', ARGV[4], 'exp', expires, 'hr', hour_of(now), 'keys', table.concat(keys, ' '))
redis.call('ZADD', KEYS[1], expires, ARGV[3])
return {1, expired}
