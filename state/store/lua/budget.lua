-- Reads one budget's current period after expiring due reservations.
-- KEYS[1] tenant expiry zset
-- ARGV now|'' , tenant key base, retention ms, scope, period (d|m)
-- returns {period code, current hour, expired, spent, reserved, h00..h23}
local now = now_us(ARGV[1])
local base = ARGV[2]
local expired = expire_due(KEYS[1], base .. 'res:', now, ARGV[3])
local code = period_code(ARGV[5], now)
local fields = {'spent', 'rsv'}
for h = 0, 23 do
  fields[#fields + 1] = string.format('h%02d', h)
end
local v = redis.call('HMGET', base .. 'bud:' .. ARGV[4] .. ':' .. code, unpack(fields))
local out = {code, hour_of(now), expired}
for i = 1, #fields do
  out[#out + 1] = tonumber(v[i]) or 0
end
return out
