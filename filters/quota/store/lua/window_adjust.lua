-- Adds a delta to a window that has not ended.
-- KEYS[1] window counter
-- ARGV now|'' , window end ms, delta
-- returns 1 if applied, 0 if the window is over or gone
local now_ms = math.floor(now_us(ARGV[1]) / 1000)
if now_ms >= tonumber(ARGV[2]) or redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('INCRBY', KEYS[1], ARGV[3])
return 1
