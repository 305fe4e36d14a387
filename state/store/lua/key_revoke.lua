-- Marks a key record revoked, keeping the first revocation time, and has
-- Redis delete the record after the retention (the tenant index forgets
-- it when next listed).
-- KEYS[1] record hash
-- ARGV now|'', retention in milliseconds
-- returns 1 if the record exists, 0 otherwise
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if redis.call('HSETNX', KEYS[1], 'revoked', int(now_us(ARGV[1]))) == 1 then
  redis.call('PEXPIRE', KEYS[1], integer(ARGV[2]))
end
return 1
