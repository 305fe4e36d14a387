-- Shared helpers, prepended to every script. Numbers handed to redis.call go
-- through int(): Lua's default conversion prints 14 digits and would round
-- microsecond timestamps.

local function int(x)
  return string.format('%d', x)
end

-- now_us is the pinned time in ARGV (tests) or the server's clock, so that
-- replicas with skewed clocks agree.
local function now_us(pinned)
  local t = tonumber(pinned)
  if t then
    return t
  end
  local tm = redis.call('TIME')
  return tonumber(tm[1]) * 1000000 + tonumber(tm[2])
end

-- civil turns days since 1970-01-01 into a proleptic Gregorian year, month
-- and day (Howard Hinnant's civil_from_days).
local function civil(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then
    y = y + 1
  end
  return y, m, d
end

-- period_code names the UTC period holding now: dYYYYMMDD or mYYYYMM.
local function period_code(period, now)
  local y, m, d = civil(math.floor(now / 86400000000))
  if period == 'd' then
    return string.format('d%04d%02d%02d', y, m, d)
  end
  return string.format('m%04d%02d', y, m)
end

local function hour_of(now)
  return math.floor((now % 86400000000) / 3600000000)
end

-- keep_ms is how long a budget counter outlives its last write.
local function keep_ms(budget_key)
  if string.match(budget_key, ':d%d+$') then
    return 8 * 86400000
  end
  return 93 * 86400000
end

-- expire_due returns the amounts of this tenant's reservations whose TTL has
-- passed and keeps each as an expired record for late commits.
local function expire_due(zkey, res_prefix, now, retention_ms)
  local ids = redis.call('ZRANGEBYSCORE', zkey, '-inf', int(now))
  for _, id in ipairs(ids) do
    local rk = res_prefix .. id
    local r = redis.call('HMGET', rk, 'st', 'amt', 'keys')
    if r[1] == 'a' then
      for bk in string.gmatch(r[3], '%S+') do
        redis.call('HINCRBY', bk, 'rsv', -tonumber(r[2]))
      end
      redis.call('HSET', rk, 'st', 'x')
      redis.call('PEXPIRE', rk, retention_ms)
    end
    redis.call('ZREM', zkey, id)
  end
  return #ids
end
