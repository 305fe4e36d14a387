-- Every entry of a tally series, with the time to decay them to; an
-- expired series is deleted and reads empty.
-- KEYS[1] series hash
-- ARGV now|''
local now = now_us(ARGV[1])
local out = { int(now) }
local exp = tonumber(redis.call('HGET', KEYS[1], ''))
if exp ~= nil and exp <= now then
  redis.call('DEL', KEYS[1])
  return out
end
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i] ~= '' then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
