-- Admits one request against its tenant's limits, in order, stopping at the
-- first refusal: a token from each bucket, then every window line (all or
-- none), then the reservation on every budget line (all or none). What a
-- step before the refusing one took stays taken, as separate calls would
-- have left it. Every key is built under the tenant's key base, so the
-- whole admission is one slot.
-- KEYS[1] tenant expiry zset; KEYS[2] reservation hash (same hash tag)
-- ARGV now|'' , tenant key base, retention ms,
--      nb, then nb times: bucket name, rate, burst, requested, ttl ms,
--      window group, nw, then nw times: name, limit, size ms, amount,
--      request ('' for no reservation), amount, ttl us,
--      nl, then nl times: scope, period (d|m), limit
-- returns {stage (0 admitted, 1 bucket, 2 windows, 3 budget), now ms,
--          expired, buckets run, then per bucket run: allowed, left, retry us,
--          refused window (0: none), then nw times: used, start ms,
--          budget status (1 granted, 0 refused, -1 id in use, 2 not run),
--          refusing line, remaining, hour, lines read, then per line:
--          spent, reserved, the hour's spend}
local now = now_us(ARGV[1])
local now_ms = math.floor(now / 1000)
local base = ARGV[2]
local out = {0, now_ms, 0}
local stage = 0

local nb = tonumber(ARGV[4])
local j = 5
local ran = 0
local bucket_out = {}
for i = 1, nb do
  local k = j + (i - 1) * 5
  local allowed, left, retry = take_bucket(base .. 'bkt:' .. ARGV[k], now, tonumber(ARGV[k + 1]), tonumber(ARGV[k + 2]), tonumber(ARGV[k + 3]), ARGV[k + 4])
  ran = i
  bucket_out[#bucket_out + 1] = allowed
  bucket_out[#bucket_out + 1] = left
  bucket_out[#bucket_out + 1] = retry
  if allowed == 0 then
    stage = 1
    break
  end
end
out[#out + 1] = ran
for _, v in ipairs(bucket_out) do
  out[#out + 1] = v
end

j = j + nb * 5
local wbase = base .. 'win:' .. ARGV[j] .. ':'
local nw = tonumber(ARGV[j + 1])
j = j + 2
local keys, used, starts, refused = read_windows(wbase, now_ms, ARGV, j, nw)
if stage == 0 then
  if refused == 0 then
    add_windows(keys, used, starts, now_ms, ARGV, j, nw)
  else
    stage = 2
  end
else
  refused = 0 -- only read, for the caller's headers
end
out[#out + 1] = refused
for i = 1, nw do
  out[#out + 1] = used[i]
  out[#out + 1] = starts[i]
end

j = j + nw * 4
local request = ARGV[j]
local nl = tonumber(ARGV[j + 3])
if stage ~= 0 or request == '' then
  out[#out + 1] = 2
  for _ = 1, 4 do
    out[#out + 1] = 0
  end
else
  out[3] = expire_due(KEYS[1], base .. 'res:', now, ARGV[3])
  local status, line, remaining, spent, rsv, hs = reserve_lines(KEYS[1], KEYS[2], base, request, now, ARGV[j + 1], ARGV[j + 2], ARGV, j + 4, nl)
  if status ~= 1 then
    stage = 3
  end
  out[#out + 1] = status
  out[#out + 1] = line
  out[#out + 1] = remaining
  out[#out + 1] = hour_of(now)
  out[#out + 1] = #spent
  for i = 1, #spent do
    out[#out + 1] = spent[i]
    out[#out + 1] = rsv[i]
    out[#out + 1] = hs[i]
  end
end
out[1] = stage
return out
