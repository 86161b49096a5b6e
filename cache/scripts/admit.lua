-- admit.lua: one token from an API key's bucket, in the key's own slot. Used for every request
-- of a rate-limited key too slow to lease tokens (lease.lua): reads, and verify or reactivate
-- before apply.lua runs in the code's shard. The replay check is not here: every request's
-- replay marker is spent before, in its own slot (cache/precall.go).
-- The bucket is written only when a token is taken, so a refused request changes nothing.
--
-- KEYS[1] token bucket   acv:rl:{<key id>}
--
-- ARGV[1] now, unix ms
-- ARGV[2] rate, tokens per second (> 0)
-- ARGV[3] burst
--
-- Reply: { status, rl_remaining, rl_wait_ms }
--   status S_OK admitted, or S_RATE_LIMITED (rl_wait_ms = time until a token).
--
-- Hash field names (F_*) and reply statuses (S_*) are locals that cache/layout.go prepends.

local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], F_TOKENS, F_REFILLED)
local tokens = burst
if b[1] then
  tokens = math.min(burst, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate / 1000)
end
if tokens < 1 then
  return {S_RATE_LIMITED, 0, math.ceil((1 - tokens) * 1000 / rate)}
end
tokens = tokens - 1
redis.call('HSET', KEYS[1], F_TOKENS, tostring(tokens), F_REFILLED, ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {S_OK, math.floor(tokens), 0}
