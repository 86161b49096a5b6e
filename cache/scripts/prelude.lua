-- prelude.lua: what the cache's scripts share, run once when a script's library loads (each
-- script is a Redis Function of its own library: internal/redisscript). cache/layout.go puts
-- the hash field names (F_*), reply statuses (S_*) and TTLs (T_*) before it.

-- refill is the tokens an API key's bucket holds at now (unix ms): what it held at its last
-- write plus rate (tokens per second) for the time since, at most burst. A bucket never
-- written, or expired, is full.
local function refill(bucket, now, rate, burst)
  local b = redis.call('HMGET', bucket, F_TOKENS, F_REFILLED)
  if not b[1] then
    return burst
  end
  return math.min(burst, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate / 1000)
end

-- keep writes a bucket's tokens as of now (unix ms, as the caller sent it). The bucket expires
-- a second after it would have refilled to burst: an absent bucket is a full one.
local function keep(bucket, tokens, now, rate, burst)
  redis.call('HSET', bucket, F_TOKENS, tostring(tokens), F_REFILLED, now)
  redis.call('PEXPIRE', bucket, math.ceil(burst / rate * 1000) + 1000)
end

-- take takes up to want whole tokens from a bucket, never waiting: status, tokens granted,
-- whole tokens left, and (when short of one token) the ms until the bucket holds one. The
-- bucket is written only when tokens are taken, so a refused request changes nothing.
local function take(bucket, now, rate, burst, want)
  local tokens = refill(bucket, tonumber(now), rate, burst)
  if tokens < 1 then
    return S_RATE_LIMITED, 0, 0, math.ceil((1 - tokens) * 1000 / rate)
  end
  local granted = math.min(want, math.floor(tokens))
  tokens = tokens - granted
  keep(bucket, tokens, now, rate, burst)
  return S_OK, granted, math.floor(tokens), 0
end
