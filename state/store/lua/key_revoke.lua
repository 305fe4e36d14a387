-- Marks a key record revoked, keeping the first revocation time.
-- KEYS[1] record hash
-- ARGV now|''
-- returns 1 if the record exists, 0 otherwise
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSETNX', KEYS[1], 'revoked', int(now_us(ARGV[1])))
return 1
