-- Records a provider's state stamped with the store's time.
-- KEYS[1] health hash
-- ARGV now|'' , provider, state
-- returns the stamp in us
local now = now_us(ARGV[1])
redis.call('HSET', KEYS[1], ARGV[2], int(now) .. '|' .. ARGV[3])
return now
