-- Fixed-window counters, all or nothing.
-- KEYS[1] group anchor (routing only; every key below shares its hash tag)
-- ARGV now|'' , key base, n, then n times: name, limit, size ms, amount
-- returns {refused index (0: allowed), now ms, then n times: used, start ms}
local now_ms = math.floor(now_us(ARGV[1]) / 1000)
local n = tonumber(ARGV[3])
local keys, used, starts, refused = read_windows(ARGV[2], now_ms, ARGV, 4, n)
if refused == 0 then
  add_windows(keys, used, starts, now_ms, ARGV, 4, n)
end
local out = {refused, now_ms}
for i = 1, n do
  out[#out + 1] = used[i]
  out[#out + 1] = starts[i]
end
return out
