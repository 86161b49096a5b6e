-- admit.lua: one token from an API key's bucket, in the key's own slot. Used for every request
-- of a rate-limited key too slow to lease tokens (lease.lua): reads, and verify or reactivate
-- before apply.lua runs in the code's shard. The replay check is not here: every request's
-- replay marker is spent before, in its own slot (cache/precall.go).
--
-- KEYS[1] token bucket   acv:rl:{<key id>}
--
-- ARGV[1] now, unix ms
-- ARGV[2] rate, tokens per second (> 0)
-- ARGV[3] burst
--
-- Reply: { status, rl_remaining, rl_wait_ms }
--   S_OK admitted; S_RATE_LIMITED refused, rl_wait_ms is the time until a token.
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

local status, _, remaining, wait = take(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), 1)
return {status, remaining, wait}
