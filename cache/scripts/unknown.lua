-- unknown.lua: remember briefly that a code value does not exist in Postgres, so repeated
-- attempts on it do not each cost a Postgres query. Never replaces a real entry; a code created
-- later replaces this one (putcode.lua).
--
-- KEYS[1] code hash acv:{NN}:c:<project, 16 raw bytes><value>
-- ARGV[1] ttl, seconds
--
-- Reply: { status }: S_OK stored, S_UNCHANGED an entry was already there.
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

if redis.call('EXISTS', KEYS[1]) == 1 then
  return {S_UNCHANGED}
end
redis.call('HSET', KEYS[1], F_UNKNOWN, '1')
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
return {S_OK}
