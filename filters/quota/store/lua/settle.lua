-- Commits (actual >= 0) or releases (actual = -1) a reservation, once.
-- KEYS[1] tenant expiry zset; KEYS[2] reservation hash
-- ARGV request id, actual, retention ms
-- returns an Outcome code, or 0 for an unknown id
local r = redis.call('HMGET', KEYS[2], 'st', 'amt', 'keys', 'hr')
local st = r[1]
local actual = tonumber(ARGV[2])
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
    redis.call('HINCRBY', bk, 'rsv', -tonumber(r[2]))
  end
  if commit then
    redis.call('HINCRBY', bk, 'spent', ARGV[2])
    if string.match(bk, ':d%d+$') then
      redis.call('HINCRBY', bk, hour, ARGV[2])
    end
  end
  redis.call('PEXPIRE', bk, keep_ms(bk))
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'st', commit and 'c' or 'r')
redis.call('PEXPIRE', KEYS[2], ARGV[3])
if not commit then
  return 2
elseif st == 'x' then
  return 3
end
return 1
