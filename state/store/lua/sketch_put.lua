-- Replaces one replica's summary of a series and drops the expired ones.
-- KEYS[1] series hash
-- ARGV now|'', replica, ttl in us, summary
local now = now_us(ARGV[1])
local ttl = tonumber(ARGV[3])
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local exp = tonumber(string.match(all[i + 1], '^(%d+)|'))
  if exp == nil or exp <= now then
    redis.call('HDEL', KEYS[1], all[i])
  end
end
redis.call('HSET', KEYS[1], ARGV[2], int(now + ttl) .. '|' .. ARGV[4])
local keep = math.ceil(ttl / 1000)
if redis.call('PTTL', KEYS[1]) < keep then
  redis.call('PEXPIRE', KEYS[1], keep)
end
return 1
