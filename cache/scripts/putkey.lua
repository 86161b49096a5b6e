-- putkey.lua: mirror an API key into Redis, so authentication reads no Postgres. The newest
-- version wins, whoever writes it (an operator command or a replica loading a key Redis lacked),
-- so a slow load never puts back an older state. Revocation is for good: once the entry says
-- revoked, no write clears it.
--
-- KEYS[1] key hash acv:key:{<key id>}
--
-- ARGV[1] project id
-- ARGV[2] secret, sealed (opaque to Redis)
-- ARGV[3] rate, tokens per second ("0" = unlimited)
-- ARGV[4] burst
-- ARGV[5] "1" when revoked
-- ARGV[6] version
--
-- Reply: { status }: S_OK stored, S_UNCHANGED kept the newer entry Redis had.
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

local k = redis.call('HMGET', KEYS[1], F_UNKNOWN, F_VER, F_KEY_REVOKED)
if k[1] == false and k[2] and tonumber(k[2]) >= tonumber(ARGV[6]) then
  return {S_UNCHANGED}
end
local revoked = ARGV[5]
if k[3] == '1' then
  revoked = '1'
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], F_KEY_PROJECT, ARGV[1], F_KEY_SECRET, ARGV[2], F_KEY_RATE, ARGV[3],
  F_KEY_BURST, ARGV[4], F_KEY_REVOKED, revoked, F_VER, ARGV[6])
return {S_OK}
