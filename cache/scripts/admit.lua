-- admit.lua: admission in the API key's own slot. For a request that names no code (a GET, or
-- a request refused before reaching one): the replay check and the per-key token bucket, in
-- one round trip. For a verify or reactivate of a rate-limited key: the token alone (ARGV[2]
-- "0"), taken before apply.lua runs in the code's shard.
-- Read checks run first and the replay marker and spent token are written only when the
-- request is admitted, so a rate-limited request can be retried unchanged.
--
-- KEYS[1] token bucket   acv:rl:{<key id>}
-- KEYS[2] replay marker  acv:rp:{<key id>}:<replay key>
--
-- ARGV[1] now, unix ms
-- ARGV[2] "1" to replay-check this request
-- ARGV[3] replay marker ttl, seconds
-- ARGV[4] rate, tokens per second ("0" = unlimited)
-- ARGV[5] burst
--
-- Reply: { status, rl_remaining, rl_wait_ms }
--   status S_OK admitted, S_RATE_LIMITED (rl_wait_ms = time until a token), S_REPLAYED.
--   rl_remaining is -1 when the key is unlimited.
--
-- Hash field names (F_*) and reply statuses (S_*) are locals that cache/layout.go prepends.

local now = tonumber(ARGV[1])
local check_replay = ARGV[2] == '1'
if check_replay and redis.call('EXISTS', KEYS[2]) == 1 then
  return {S_REPLAYED, -1, 0}
end

local rate = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local remaining = -1
if rate > 0 then
  local b = redis.call('HMGET', KEYS[1], F_TOKENS, F_REFILLED)
  local tokens = burst
  if b[1] then
    tokens = math.min(burst, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate / 1000)
  end
  if tokens < 1 then
    return {S_RATE_LIMITED, 0, math.ceil((1 - tokens) * 1000 / rate)}
  end
  tokens = tokens - 1
  remaining = math.floor(tokens)
  redis.call('HSET', KEYS[1], F_TOKENS, tostring(tokens), F_REFILLED, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
end

if check_replay then
  redis.call('SET', KEYS[2], '1', 'EX', tonumber(ARGV[3]))
end
return {S_OK, remaining, 0}
