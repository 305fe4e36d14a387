-- Adds a delta to a window that has not ended.
-- KEYS[1] window counter
-- ARGV now|'' , window end ms, delta
-- returns 1 if applied, 0 if the window is over or gone
return adjust_window(KEYS[1], math.floor(now_us(ARGV[1]) / 1000), tonumber(ARGV[2]), ARGV[3])
