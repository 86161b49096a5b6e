-- release.lua: drop an Idempotency-Key claim (claim.go) that a request made but did not use:
-- it was refused (a replay, the rate limit) before it ran. Only the request's own claim goes:
-- one made since by another request, with another hash, stays.
--
-- KEYS[1] claim  acv:ik:{<key id>:<idempotency key>}
-- ARGV[1] the request hash the claim was made with
--
-- Reply: 1 dropped, 0 not this request's claim (or none).

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
