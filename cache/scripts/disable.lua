-- disable.lua: set or clear a code's disable flag as a new version of its state, so the admin
-- change reaches the hot path at once and Postgres can apply it in version order.
--
-- KEYS[1] code hash acv:{NN}:c:<project, 16 raw bytes><value>
-- ARGV[1] "1" to disable, "0" to enable
--
-- Reply: { status, verified_at_ms, verified_by, version }
--   S_OK applied; S_CODE_MISS nothing changed: load the code, then call again.
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

local c = redis.call('HMGET', KEYS[1], F_UNKNOWN, F_ID, F_VAT, F_BY)
if c[2] == false then
  return {S_CODE_MISS, 0, '', 0}
end
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], F_DIS, '1')
else
  redis.call('HDEL', KEYS[1], F_DIS)
end
local n = redis.call('HINCRBY', KEYS[1], F_VER, 1)
return {S_OK, tonumber(c[3] or '0'), c[4] or '', n}
