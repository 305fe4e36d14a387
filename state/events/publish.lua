-- Adds events not added before, in one atomic run.
-- KEYS[1] the stream; its markers are KEYS[1]..':seen:'..id, in the same
--         hash slot thanks to the key's {events} tag
-- ARGV[1] MAXLEN (approximate), ARGV[2] marker TTL in seconds,
-- ARGV[3..] triples of id, type, event JSON
-- returns how many events were added
local added = 0
for i = 3, #ARGV, 3 do
  if redis.call('SET', KEYS[1] .. ':seen:' .. ARGV[i], '1', 'NX', 'EX', ARGV[2]) then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'type', ARGV[i + 1], 'id', ARGV[i], 'event', ARGV[i + 2])
    added = added + 1
  end
end
return added
