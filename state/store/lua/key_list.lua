-- Lists one tenant's key records in one consistent read, and drops from
-- the index the hashes whose records are gone (revoked and expired).
-- KEYS[1] tenant index
-- ARGV record key prefix
-- returns {hash, rec, revoked, ...}; revoked is '' when not revoked
local out = {}
for _, h in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('HMGET', ARGV[1] .. h, 'rec', 'revoked')
  if v[1] then
    out[#out + 1] = h
    out[#out + 1] = v[1]
    out[#out + 1] = v[2] or ''
  else
    redis.call('SREM', KEYS[1], h)
  end
end
return out
