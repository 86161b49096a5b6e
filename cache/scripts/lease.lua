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
--   status S_OK (granted >= 1) or S_RATE_LIMITED (granted 0, rl_wait_ms = time until a token);
--   rl_remaining is the whole tokens left in the bucket after the grant.
--
-- Hash field names (F_*) and reply statuses (S_*) are locals that cache/layout.go prepends.

local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], F_TOKENS, F_REFILLED)
local tokens = burst
if b[1] then
  tokens = math.min(burst, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate / 1000)
end
if tokens < 1 then
  return {S_RATE_LIMITED, 0, 0, math.ceil((1 - tokens) * 1000 / rate)}
end
local granted = math.min(want, math.floor(tokens))
tokens = tokens - granted
redis.call('HSET', KEYS[1], F_TOKENS, tostring(tokens), F_REFILLED, ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {S_OK, granted, math.floor(tokens), 0}
