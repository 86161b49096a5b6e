-- testdata/apply_v1.lua: apply.lua as it was before the lean rewrite (JSON event built in Lua,
-- twelve arguments, a table reply), kept unchanged below this note only so that
-- MeasureVerifyCPU can measure the "before" figure in the same run (ApplyV1). Never deployed.
--
-- apply.lua: one verify or reactivate, atomically.
--
-- Runs, in this order, with every key in the hash-tag slot of the code's virtual shard:
--   1. code/project presence (a miss asks the caller to load from Postgres; nothing written);
--   2. replay check of (key id, replay key), unless the caller set the request's marker in
--      its nonce's own slot before (ARGV[8] "0": a request with X-Nonce and Idempotency-Key);
--   3. Idempotency-Key: same request hash replays the stored outcome, another hash conflicts
--      (the caller claimed the key in its own slot first, so a key reused with another code
--      is refused there; this record is what a retry gets back);
--   4. the contract's checks in order (not found, project disabled, code disabled, used /
--      unused, code expired, project expired), the state transition, and the verification-log event
--      appended to the shard's outbox stream — together, or not at all.
-- The per-key token bucket lives in the API key's own slot: the caller takes a token (from its
-- lease, lease.lua, or admit.lua) before this script, and gives it back when this script refuses.
--
-- KEYS[1] code hash      acv:{T}:c:<project, 16 raw bytes><value>
-- KEYS[2] project copy   acv:{T}:p:<project>
-- KEYS[3] outbox stream  acv:{T}:outbox
-- KEYS[4] replay marker  acv:{T}:rp:<key id>:<replay key>
-- KEYS[5] idempotency    acv:{T}:ik:<key id>:<idempotency key>
--
-- ARGV[1]  action: "verify" | "reactivate"
-- ARGV[2]  now, unix ms
-- ARGV[3]  event id (32 hex)
-- ARGV[4]  project id
-- ARGV[5]  verified_by / reactivated_by ("" = none)
-- ARGV[6]  reason of a reactivation ("" = none)
-- ARGV[7]  client ip
-- ARGV[8]  replay marker ttl, seconds; "0": no replay check or marker here
-- ARGV[9]  "1" when an Idempotency-Key was sent
-- ARGV[10] request hash (idempotency)
-- ARGV[11] idempotency ttl, seconds
-- ARGV[12] trace context to carry to Kafka ("" = none)
--
-- Reply: { status, error_code, code_id, verified_at_ms, at_ms }
--   status S_OK (error_code "" = success), S_CODE_MISS, S_PROJECT_MISS, S_REPLAYED,
--          S_IDEM_CONFLICT, S_IDEM_REPLAYED (a stored outcome).
--
-- Hash field names (F_*) and reply statuses (S_*) are locals that cache/layout.go prepends.

local action = ARGV[1]
local now = tonumber(ARGV[2])

-- 1. presence: a code entry always has its id (F_ID) or the unknown marker (F_UNKNOWN)
local c = redis.call('HMGET', KEYS[1], F_UNKNOWN, F_ID, F_EXP, F_VAT, F_BY, F_DIS, F_VER)
if c[1] == false and c[2] == false then
  return {S_CODE_MISS, '', '', 0, 0}
end
local unknown = c[1] == '1'
local p = nil
if not unknown then
  p = redis.call('HMGET', KEYS[2], F_EN, F_EXP)
  if p[1] == false then
    return {S_PROJECT_MISS, '', '', 0, 0}
  end
end

-- 2. replay
local replay_ttl = tonumber(ARGV[8])
if replay_ttl > 0 and redis.call('EXISTS', KEYS[4]) == 1 then
  return {S_REPLAYED, '', '', 0, 0}
end

-- 3. idempotency (read)
local idem = ARGV[9] == '1'
if idem then
  local s = redis.call('HMGET', KEYS[5], F_REQ_HASH, F_REPLY)
  if s[1] then
    if s[1] ~= ARGV[10] then
      return {S_IDEM_CONFLICT, '', '', 0, 0}
    end
    if replay_ttl > 0 then
      redis.call('SET', KEYS[4], '1', 'EX', replay_ttl)
    end
    local err, id, vat, at = string.match(s[2], '^([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
    return {S_IDEM_REPLAYED, err, id, tonumber(vat), tonumber(at)}
  end
end

-- admitted: record the replay marker
if replay_ttl > 0 then
  redis.call('SET', KEYS[4], '1', 'EX', replay_ttl)
end

-- 4. the contract's checks, in order
local err = ''
local code_id = ''
local vat = 0
if unknown then
  err = 'CODE_NOT_FOUND'
else
  -- The id is stored as 16 raw bytes; the outcome and the event carry its hex form.
  code_id = string.format('%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x', string.byte(c[2], 1, 16))
  if c[4] then vat = tonumber(c[4]) end
  local now_s = math.floor(now / 1000)
  -- The effective expiry is the code's own, or the project's when the code has none: a code
  -- of an expired project without an expiry of its own is in state expired (CODE_EXPIRED).
  -- PROJECT_EXPIRED is left for a project expiry passed while the code's own has not.
  local expiry = c[3] or p[2]
  if p[1] ~= '1' then
    err = 'PROJECT_DISABLED'
  elseif c[6] == '1' then
    err = 'CODE_DISABLED'
  elseif action == 'verify' and c[4] then
    err = 'CODE_ALREADY_USED'
  elseif action == 'reactivate' and not c[4] then
    err = 'CODE_ALREADY_UNUSED'
  elseif expiry and now_s >= tonumber(expiry) then
    err = 'CODE_EXPIRED'
  elseif p[2] and now_s >= tonumber(p[2]) then
    err = 'PROJECT_EXPIRED'
  end
end

local version = tonumber(c[7] or '0')
local by = ARGV[5]
if not unknown then
  local changed = err == ''
  local state_by = c[5] or ''
  if changed then
    version = version + 1
    if action == 'verify' then
      vat = now
      state_by = by
      if by ~= '' then
        redis.call('HSET', KEYS[1], F_VAT, ARGV[2], F_BY, by, F_VER, version)
      else
        redis.call('HSET', KEYS[1], F_VAT, ARGV[2], F_VER, version)
        if c[5] then redis.call('HDEL', KEYS[1], F_BY) end
      end
    else
      vat = 0
      state_by = ''
      redis.call('HSET', KEYS[1], F_VER, version)
      redis.call('HDEL', KEYS[1], F_VAT, F_BY)
    end
  end
  local result = 'failed'
  local reason = err
  if changed then
    if action == 'verify' then
      result = 'success'
    else
      result = 'reactivated'
      reason = ARGV[6]
    end
  end
  -- Ids are hex and the action and result are constants: only caller text needs escaping.
  local ev = '{"id":"' .. ARGV[3] ..
    '","code_id":"' .. code_id ..
    '","project_id":"' .. ARGV[4] ..
    '","action":"' .. action ..
    '","result":"' .. result .. '"' ..
    ',"reason":' .. cjson.encode(reason) ..
    ',"verified_by":' .. cjson.encode(by) ..
    ',"ip":' .. cjson.encode(ARGV[7]) ..
    ',"ts":' .. ARGV[2] ..
    ',"version":' .. string.format('%d', version) ..
    ',"state_changed":' .. tostring(changed) ..
    ',"verified_at":' .. string.format('%d', vat) ..
    ',"state_verified_by":' .. cjson.encode(state_by) ..
    ',"disabled":' .. tostring(c[6] == '1') .. '}'
  if ARGV[12] ~= '' then
    redis.call('XADD', KEYS[3], '*', F_EVENT, ev, F_TRACEPARENT, ARGV[12])
  else
    redis.call('XADD', KEYS[3], '*', F_EVENT, ev)
  end
end

if idem then
  local packed = err .. '|' .. code_id .. '|' .. string.format('%d', vat) .. '|' .. ARGV[2]
  redis.call('HSET', KEYS[5], F_REQ_HASH, ARGV[10], F_REPLY, packed)
  redis.call('EXPIRE', KEYS[5], tonumber(ARGV[11]))
end

return {S_OK, err, code_id, vat, now}
