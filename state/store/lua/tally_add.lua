-- Decays entries of a tally series to now and adds to them.
-- KEYS[1] series hash
-- ARGV now|'', half-life us, ttl ms, n, n x (name, "sum|sum|...")
-- Each field is "last add us|sum|sum|..."; field "" (never an entry's
-- name) holds when the series expires, in us, so that a pinned clock
-- expires it too.
local now = now_us(ARGV[1])
local half = tonumber(ARGV[2])
local n = tonumber(ARGV[4])
for i = 1, n do
  local name, add = ARGV[3 + 2 * i], ARGV[4 + 2 * i]
  local sums = {}
  local old = redis.call('HGET', KEYS[1], name)
  if old then
    local at = nil
    for v in string.gmatch(old, '[^|]+') do
      if at == nil then
        at = tonumber(v)
      else
        sums[#sums + 1] = tonumber(v) or 0
      end
    end
    local f = 1
    if at and now > at then
      f = 2 ^ (-(now - at) / half)
    end
    for j = 1, #sums do
      sums[j] = sums[j] * f
    end
  end
  local j = 0
  for v in string.gmatch(add, '[^|]+') do
    j = j + 1
    sums[j] = (sums[j] or 0) + tonumber(v)
  end
  local out = { int(now) }
  for k = 1, #sums do
    out[#out + 1] = string.format('%.17g', sums[k])
  end
  redis.call('HSET', KEYS[1], name, table.concat(out, '|'))
end
redis.call('HSET', KEYS[1], '', int(now + tonumber(ARGV[3]) * 1000))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
