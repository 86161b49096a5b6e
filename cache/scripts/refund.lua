-- refund.lua: give back the token admit.lua took for a verify or reactivate that apply.lua then
-- refused (a replay, an Idempotency-Key used with another request) or that failed (a load from
-- Postgres, Redis itself), so such a request costs its key nothing and can be sent again; or
-- the unused tokens of a replica's lease (lease.lua) once it lapsed.
--
-- KEYS[1] token bucket acv:rl:{<key id>}
-- ARGV[1] burst
-- ARGV[2] tokens to give back (absent: 1)
--
-- Reply: { status }: S_OK refunded, S_UNCHANGED no bucket (it expired: it is full anyway).
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

local t = redis.call('HGET', KEYS[1], F_TOKENS)
if not t then
  return {S_UNCHANGED}
end
redis.call('HSET', KEYS[1], F_TOKENS, tostring(math.min(tonumber(ARGV[1]), tonumber(t) + tonumber(ARGV[2] or '1'))))
return {S_OK}
