-- Shared helpers, prepended to every script. Numbers handed to redis.call go
-- through int(): Lua's default conversion prints 14 digits and would round
-- microsecond timestamps.

local function int(x)
  return string.format('%d', x)
end

-- integer checks that an amount handed to INCRBY or HINCRBY is a decimal
-- integer string before anything is written: a script stopped halfway by
-- Redis's own refusal would leave counters half updated.
local function integer(s)
  if type(s) ~= 'string' or #s > 19 or not string.match(s, '^%-?%d+$') then
    error('switchyard: not an integer amount: ' .. tostring(s))
  end
  return s
end

-- negated is the integer string s with its sign flipped, exactly: the
-- number -tonumber(s) would print as 1.2345678901234e+14 past 14 digits.
local function negated(s)
  if s == '0' then
    return s -- Redis refuses '-0' as an integer
  end
  if string.sub(s, 1, 1) == '-' then
    return string.sub(s, 2)
  end
  return '-' .. s
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
        redis.call('HINCRBY', bk, 'rsv', negated(integer(r[2])))
      end
      redis.call('HSET', rk, 'st', 'x')
      redis.call('PEXPIRE', rk, retention_ms)
    end
    redis.call('ZREM', zkey, id)
  end
  return #ids
end

-- take_bucket is one token-bucket step with Spring Cloud Gateway's
-- RedisRateLimiter semantics, in micro-tokens and microseconds: a refused
-- call takes nothing but still stores the refilled level and the time.
-- Returns allowed (0|1), whole tokens left, retry-after us (0: allowed or
-- never).
local function take_bucket(key, now, rate, burst, requested, ttl_ms)
  local cap = burst * 1000000
  local want = requested * 1000000
  local v = redis.call('HMGET', key, 'tok', 'ts')
  local tok = tonumber(v[1]) or cap
  local last = tonumber(v[2]) or 0
  local filled = math.min(cap, tok + math.floor(math.max(0, now - last) * rate))
  local allowed = 0
  local left = filled
  local retry = 0
  if filled >= want then
    allowed = 1
    left = filled - want
  elseif want <= cap then
    retry = math.ceil((want - filled) / rate)
  end
  redis.call('HSET', key, 'tok', int(left), 'ts', int(now))
  redis.call('PEXPIRE', key, ttl_ms)
  return allowed, math.floor(left / 1000000), retry
end

-- read_windows reads n fixed-window lines given in args from index j on
-- (name, limit, size ms, amount each) under base. Returns their counter
-- keys, counts, window starts, and the first line the amounts do not fit
-- (0: all fit).
local function read_windows(base, now_ms, args, j, n)
  local keys, used, starts = {}, {}, {}
  local refused = 0
  for i = 1, n do
    local k = j + (i - 1) * 4
    local size = tonumber(args[k + 2])
    integer(args[k + 3])
    starts[i] = now_ms - now_ms % size
    keys[i] = base .. args[k] .. ':' .. int(starts[i])
    used[i] = tonumber(redis.call('GET', keys[i])) or 0
    if refused == 0 and used[i] + tonumber(args[k + 3]) > tonumber(args[k + 1]) then
      refused = i
    end
  end
  return keys, used, starts, refused
end

-- add_windows adds the amounts of the lines read_windows read; each counter
-- expires when its window ends.
local function add_windows(keys, used, starts, now_ms, args, j, n)
  for i = 1, n do
    local k = j + (i - 1) * 4
    used[i] = redis.call('INCRBY', keys[i], args[k + 3])
    redis.call('PEXPIRE', keys[i], int(starts[i] + tonumber(args[k + 2]) - now_ms))
  end
end

-- adjust_window adds delta to a counter whose window (ending at end_ms) has
-- not ended. Returns 1 if applied, 0 if the window is over or gone.
local function adjust_window(key, now_ms, end_ms, delta)
  integer(delta)
  if now_ms >= end_ms or redis.call('EXISTS', key) == 0 then
    return 0
  end
  redis.call('INCRBY', key, delta)
  return 1
end

-- reserve_lines holds amount on n budget lines given in args from index j
-- on (scope, d|m, limit each), or on none, under reservation hash rkey.
-- Every line is read first, so that each one's figures come back either
-- way. Returns status (1 granted, 0 refused, -1 the id is in use), the
-- first refusing line, what remained on it, and per line spent, reserved
-- (after the reservation) and the current hour's spend.
local function reserve_lines(zkey, rkey, base, request, now, amount_arg, ttl_us, args, j, n)
  integer(amount_arg)
  if redis.call('EXISTS', rkey) == 1 then
    return -1, 0, 0, {}, {}, {}
  end
  local amount = tonumber(amount_arg)
  local hour = hour_of(now)
  local hf = string.format('h%02d', hour)
  local keys, spent, rsv, hs = {}, {}, {}, {}
  local refused, remaining = 0, 0
  for i = 1, n do
    local k = j + (i - 1) * 3
    keys[i] = base .. 'bud:' .. args[k] .. ':' .. period_code(args[k + 1], now)
    local v = redis.call('HMGET', keys[i], 'spent', 'rsv', hf)
    spent[i], rsv[i], hs[i] = tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 0
    local limit = tonumber(args[k + 2])
    if refused == 0 and spent[i] + rsv[i] + amount > limit then
      refused, remaining = i, math.max(0, limit - spent[i] - rsv[i])
    end
  end
  if refused > 0 then
    return 0, refused, remaining, spent, rsv, hs
  end
  for i, bk in ipairs(keys) do
    rsv[i] = redis.call('HINCRBY', bk, 'rsv', amount_arg)
    redis.call('PEXPIRE', bk, keep_ms(bk))
  end
  local expires = int(now + tonumber(ttl_us))
  redis.call('HSET', rkey, 'st', 'a', 'amt', amount_arg, 'exp', expires, 'hr', hour, 'keys', table.concat(keys, ' '))
  redis.call('ZADD', zkey, expires, request)
  return 1, 0, 0, spent, rsv, hs
end

-- settle_reservation commits (actual >= 0) or releases (actual = -1) a
-- reservation, once. Returns an Outcome code, or 0 for an unknown id.
local function settle_reservation(zkey, rkey, request, actual_arg, retention_ms)
  integer(actual_arg)
  local r = redis.call('HMGET', rkey, 'st', 'amt', 'keys', 'hr')
  local st = r[1]
  local actual = tonumber(actual_arg)
  local commit = actual >= 0
  if not st then
    return 0
  elseif st == 'c' then
    return 4
  elseif st == 'r' then
    return 5
  elseif st == 'x' and not commit then
    return 6
  end
  local hour = string.format('h%02d', tonumber(r[4]))
  for bk in string.gmatch(r[3], '%S+') do
    if st == 'a' then
      redis.call('HINCRBY', bk, 'rsv', negated(integer(r[2])))
    end
    if commit then
      redis.call('HINCRBY', bk, 'spent', actual_arg)
      if string.match(bk, ':d%d+$') then
        redis.call('HINCRBY', bk, hour, actual_arg)
      end
    end
    redis.call('PEXPIRE', bk, keep_ms(bk))
  end
  redis.call('ZREM', zkey, request)
  redis.call('HSET', rkey, 'st', commit and 'c' or 'r')
  redis.call('PEXPIRE', rkey, retention_ms)
  if not commit then
    return 2
  elseif st == 'x' then
    return 3
  end
  return 1
end
