-- Reserves an amount on every budget line or on none.
-- KEYS[1] tenant expiry zset; KEYS[2] reservation hash (same hash tag)
-- ARGV now|'' , tenant key base, request id, amount, ttl us, retention ms, n,
--      then n times: scope, period (d|m), limit
-- returns {1, expired} granted; {0, expired, refusing line, remaining} refused;
--         {-1, expired} the id is in use
local now = now_us(ARGV[1])
local expired = expire_due(KEYS[1], ARGV[2] .. 'res:', now, ARGV[6])
local status, line, remaining = reserve_lines(KEYS[1], KEYS[2], ARGV[2], ARGV[3], now, ARGV[4], ARGV[5], ARGV, 8, tonumber(ARGV[7]))
if status == 0 then
  return {0, expired, line, remaining}
end
return {status, expired}
