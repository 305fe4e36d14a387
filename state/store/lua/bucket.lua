-- Token bucket with Spring Cloud Gateway RedisRateLimiter semantics, in
-- micro-tokens and microseconds.
-- KEYS[1] bucket hash {tok, ts}
-- ARGV now|'' , replenish rate (tokens/s), burst capacity, requested, ttl ms
-- returns {allowed 0|1, whole tokens left, retry-after us (0: allowed or never)}
local allowed, left, retry = take_bucket(KEYS[1], now_us(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5])
return {allowed, left, retry}
