-- unknown.lua: remember briefly that a code value does not exist in Postgres, so repeated
-- attempts on it do not each cost a Postgres query. Never replaces a real entry; a code created
-- later replaces this one (putcode.lua).
--
-- KEYS[1] code hash acv:{NN}:c:<project, 16 raw bytes><value>
-- ARGV[1] ttl, seconds
--
-- Reply: 1 stored, 0 an entry was already there.
--
-- Hash field names (F_*) and reply statuses (S_*) are locals that cache/layout.go prepends.

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], F_UNKNOWN, '1')
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
return 1
