-- disable.lua: set or clear a code's disable flag as a new version of its state, so the admin
-- change reaches the hot path at once and Postgres can apply it in version order.
--
-- KEYS[1] code hash acv:{NN}:c:<project, 16 raw bytes><value>
-- ARGV[1] "1" to disable, "0" to enable
--
-- Reply: { status, verified_at_ms, verified_by, version }
--   status 0 applied, 1 code not in Redis (load it, then call again).

local c = redis.call('HMGET', KEYS[1], 'z', 'i', 't', 'b')
if c[2] == false then
  return {1, 0, '', 0}
end
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'd', '1')
else
  redis.call('HDEL', KEYS[1], 'd')
end
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
return {0, tonumber(c[3] or '0'), c[4] or '', n}
