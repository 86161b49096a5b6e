-- release.lua: drop an Idempotency-Key claim (precall.go) that a request made but did not use:
-- it was refused (a replay, the rate limit) before it ran. Only the request's own claim goes:
-- one made since by another request, with another hash, stays.
--
-- KEYS[1] claim  acv:ik:{<key id>:<idempotency key>}
-- ARGV[1] the request hash the claim was made with
--
-- Reply: { status }: S_OK dropped, S_UNCHANGED not this request's claim (or none).
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {S_OK}
end
return {S_UNCHANGED}
