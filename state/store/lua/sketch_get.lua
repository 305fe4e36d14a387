-- Every live summary of a series, as replica, summary pairs.
-- KEYS[1] series hash
-- ARGV now|''
local now = now_us(ARGV[1])
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local exp, body = string.match(all[i + 1], '^(%d+)|(.*)$')
  if exp ~= nil and tonumber(exp) > now then
    out[#out + 1] = all[i]
    out[#out + 1] = body
  end
end
return out
