-- Commits (actual >= 0) or releases (actual = -1) a reservation, once, and
-- corrects window counters of the same tenant alongside.
-- KEYS[1] tenant expiry zset; KEYS[2] reservation hash
-- ARGV request id, actual, retention ms, and only with window deltas:
--      now|'' , tenant key base, n, then n times: counter key below the
--      base, window end ms, delta
-- returns {Outcome code (0 for an unknown id), then n times: 1 applied, 0 window over}
local out = {0}
local n = tonumber(ARGV[6]) or 0
if n > 0 then
  local now_ms = math.floor(now_us(ARGV[4]) / 1000)
  for i = 1, n do
    local k = 7 + (i - 1) * 3
    out[i + 1] = adjust_window(ARGV[5] .. ARGV[k], now_ms, tonumber(ARGV[k + 1]), ARGV[k + 2])
  end
end
out[1] = settle_reservation(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
return out
