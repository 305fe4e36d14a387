-- Expires one tenant's reservations past their TTL.
-- KEYS[1] tenant expiry zset
-- ARGV now|'' , tenant key base, retention ms
-- returns how many expired
return expire_due(KEYS[1], ARGV[2] .. 'res:', now_us(ARGV[1]), ARGV[3])
