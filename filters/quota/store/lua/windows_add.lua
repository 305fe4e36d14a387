-- Fixed-window counters, all or nothing.
-- KEYS[1] group anchor (routing only; every key below shares its hash tag)
-- ARGV now|'' , key base, n, then n times: name, limit, size ms, amount
-- returns {refused index (0: allowed), now ms, then n times: used, start ms}
local now_ms = math.floor(now_us(ARGV[1]) / 1000)
local base = ARGV[2]
local n = tonumber(ARGV[3])
local refused = 0
local keys, used, starts = {}, {}, {}
for i = 1, n do
  local j = 4 + (i - 1) * 4
  local size = tonumber(ARGV[j + 2])
  starts[i] = now_ms - now_ms % size
  keys[i] = base .. ARGV[j] .. ':' .. int(starts[i])
  used[i] = tonumber(redis.call('GET', keys[i])) or 0
  if refused == 0 and used[i] + tonumber(ARGV[j + 3]) > tonumber(ARGV[j + 1]) then
    refused = i
  end
end
local out = {refused, now_ms}
for i = 1, n do
  local j = 4 + (i - 1) * 4
  if refused == 0 then
    used[i] = redis.call('INCRBY', keys[i], ARGV[j + 3])
    redis.call('PEXPIRE', keys[i], int(starts[i] + tonumber(ARGV[j + 2]) - now_ms))
  end
  out[#out + 1] = used[i]
  out[#out + 1] = starts[i]
end
return out
