-- Token bucket with Spring Cloud Gateway RedisRateLimiter semantics, in
-- micro-tokens and microseconds.
-- KEYS[1] bucket hash {tok, ts}
-- ARGV now|'' , replenish rate (tokens/s), burst capacity, requested, ttl ms
-- returns {allowed 0|1, whole tokens left, retry-after us (0: allowed or never)}
local now = now_us(ARGV[1])
local rate = tonumber(ARGV[2])
local cap = tonumber(ARGV[3]) * 1000000
local want = tonumber(ARGV[4]) * 1000000
local v = redis.call('HMGET', KEYS[1], 'tok', 'ts')
local tok = tonumber(v[1]) or cap
local last = tonumber(v[2]) or 0
local filled = math.min(cap, tok + math.floor(math.max(0, now - last) * rate))
local allowed = 0
local left = filled
local retry = 0
if filled >= want then
  allowed = 1
  left = filled - want
elseif want <= cap then
  retry = math.ceil((want - filled) / rate)
end
redis.call('HSET', KEYS[1], 'tok', int(left), 'ts', int(now))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {allowed, math.floor(left / 1000000), retry}
