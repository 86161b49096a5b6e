-- lease.lua: take a lease of up to ARGV[4] tokens from an API key's token bucket, for a
-- replica to admit that many requests locally (cache/lease.go). Takes what the bucket holds,
-- in whole tokens, up to the lease asked for: a lease never waits for tokens, and a bucket
-- short of a whole token answers how long until it holds one.
--
-- KEYS[1] token bucket   acv:rl:{<key id>}
--
-- ARGV[1] now, unix ms
-- ARGV[2] rate, tokens per second (> 0)
-- ARGV[3] burst
-- ARGV[4] tokens wanted (>= 1)
--
-- Reply: { status, granted, rl_remaining, rl_wait_ms }
--   S_OK granted >= 1; S_RATE_LIMITED granted 0, rl_wait_ms is the time until a token;
--   rl_remaining is the whole tokens left in the bucket after the grant.
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

return {take(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))}
