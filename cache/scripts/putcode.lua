-- putcode.lua: store a code's state unless Redis already holds it. Used when a code is created
-- and when a code missing from Redis is loaded from Postgres: Redis is the newest state, so a
-- present entry always wins; only an absent key or a negative ("unknown value") entry is replaced.
--
-- KEYS[1] code hash acv:{NN}:c:<project, 16 raw bytes><value>
--
-- ARGV[1] code id, 16 raw bytes
-- ARGV[2] code expires_at, unix s ("" = none)
-- ARGV[3] verified_at, unix ms ("" = unused)
-- ARGV[4] verified_by ("" = none)
-- ARGV[5] "1" when disabled
-- ARGV[6] version
--
-- Reply: { status }: S_OK stored, S_UNCHANGED kept the entry Redis had.
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

local z = redis.call('HGET', KEYS[1], F_UNKNOWN)
if z == false and redis.call('EXISTS', KEYS[1]) == 1 then
  return {S_UNCHANGED}
end
if z then
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], F_ID, ARGV[1], F_VER, ARGV[6])
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], F_EXP, ARGV[2]) end
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], F_VAT, ARGV[3]) end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], F_BY, ARGV[4]) end
if ARGV[5] == '1' then redis.call('HSET', KEYS[1], F_DIS, '1') end
return {S_OK}
