-- Stores a key record and moves it between tenant indexes; keeps revocation.
-- KEYS[1] record hash; KEYS[2] new tenant index (same hash tag)
-- ARGV record JSON, tenant, key hash, tenant index prefix
local old = redis.call('HGET', KEYS[1], 'tenant')
if old and old ~= ARGV[2] then
  redis.call('SREM', ARGV[4] .. old, ARGV[3])
end
redis.call('HSET', KEYS[1], 'rec', ARGV[1], 'tenant', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return 1
