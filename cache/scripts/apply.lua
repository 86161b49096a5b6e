-- apply.lua: one verify or reactivate, atomically. It runs on every verify, so it is written
-- for Redis CPU (docs/design.md, "Redis CPU per verify"): five commands for a verify that
-- succeeds, four for one refused, no JSON, no hex, no number formatting it can avoid, and a
-- reply of a status and one string.
-- The caller encodes in Go what it knows before the call (the event's head) and decodes the
-- reply and the outbox entry; every argument and reply element costs Redis a Lua string.
--
-- Runs, in this order, with every key in the hash-tag slot of the code's virtual shard:
--   1. code/project presence (a miss asks the caller to load from Postgres; nothing written);
--   2. Idempotency-Key: same request hash replays the stored outcome, another hash conflicts
--      (the caller claimed the key in its own slot first, so a key reused with another code
--      is refused there; this record is what a retry gets back);
--   3. the contract's checks in order (not found, project disabled, code disabled, used /
--      unused, code expired, project expired), the state transition, and the verification-log
--      event appended to the shard's outbox — together, or not at all.
-- The replay check is not here: the caller spent the request's one replay marker, in a slot of
-- its own, before this script (cache/precall.go). The per-key token bucket lives in the API
-- key's own slot: the caller takes a token (from its lease, lease.lua, or admit.lua) before
-- this script, and gives it back when this script refuses.
--
-- KEYS[1] code hash      acv:{T}:c:<project, 16 raw bytes><value>
-- KEYS[2] project copy   acv:{T}:p:<project>
-- KEYS[3] outbox         acv:{T}:events (a list)
-- KEYS[4] idempotency    acv:{T}:ik:<key id>:<idempotency key>  (present exactly with ARGV[2])
--
-- ARGV[1] the event's head (contract.AppendEventHead), of which this script reads the action
--         (byte 2: "v" verify, "r" reactivate), now (bytes 3-15: unix ms, 13 digits) and
--         verified_by (from byte 16: its length plus one as a uvarint of one or two bytes, then
--         its bytes)
-- ARGV[2] request hash, only when an Idempotency-Key was sent
--
-- Reply: { status, outcome }
--   S_CODE_MISS, S_PROJECT_MISS: nothing changed, load the entry and call again (outcome "");
--   S_IDEM_CONFLICT: the Idempotency-Key holds another request (outcome "");
--   S_OK: this call's outcome, "" when the code does not exist, else the code id (16 raw
--     bytes) followed, unless the operation succeeded, by error code "|" verified_at (unix ms,
--     "" = unused);
--   S_IDEM_REPLAYED: the outcome the first request with this Idempotency-Key stored,
--     verified_at "|" at "|" error code "|" code id (16 raw bytes or "").
--
-- Outbox entry: one list element, head .. code id (16 raw bytes) .. disabled ("0"/"1") ..
-- error code "|" version before the operation "|" verified_at ("" = unused) "|" state's
-- verified_by; for a value no code has, head .. 16 zero bytes .. "!" .. the value
-- (contract.DecodeOutboxEntry).
--
-- Idempotency record: a string, request hash .. " " .. stored outcome, for T_IDEM seconds.
--
-- F_*, S_* and T_* are the prelude's (prelude.lua, cache/layout.go).

-- 1. presence. A code entry always has its id: one without is the unknown marker, or nothing.
local c = redis.call('HMGET', KEYS[1], F_ID, F_EXP, F_VAT, F_BY, F_DIS, F_VER)
local id = c[1]
local ps
if id then
  -- The project copy's state: "1" or "0" (enabled), followed by its expiry (unix s) if any.
  ps = redis.call('HGET', KEYS[2], F_PSTATE)
  if not ps then
    return {S_PROJECT_MISS, ''}
  end
elseif redis.call('EXISTS', KEYS[1]) == 0 then
  return {S_CODE_MISS, ''}
end

-- 2. idempotency (read)
local req = ARGV[2]
local head = ARGV[1]
local now = string.sub(head, 3, 15)
if req then
  local s = redis.call('GET', KEYS[4])
  if s then
    local sp = string.find(s, ' ', 1, true)
    if string.sub(s, 1, sp - 1) ~= req then
      return {S_IDEM_CONFLICT, ''}
    end
    -- A retry answers the first request's stored outcome. It still writes once (the record's
    -- TTL, renewed): WAIT (ACV_REDIS_WAIT_REPLICAS) waits for the replicas to reach the
    -- caller's own last write, and a retry that wrote nothing would pass it at once, before
    -- the first request's writes (earlier in the replication stream) reached a replica.
    redis.call('EXPIRE', KEYS[4], T_IDEM)
    return {S_IDEM_REPLAYED, string.sub(s, sp + 1)}
  end
end

-- 3. the contract's checks, in order
if not id then
  -- An attempt on a value no code has is logged too: 16 zero bytes for the code id, "!", and
  -- the value, which is the key's rest after the hash tag, "c:" and the project's 16 bytes.
  local k = KEYS[1]
  redis.call('RPUSH', KEYS[3], head .. string.rep('\0', 16) .. '!' .. string.sub(k, string.find(k, '}:c:', 1, true) + 20))
  if req then
    redis.call('SET', KEYS[4], req .. ' 0|' .. now .. '|CODE_NOT_FOUND|', 'EX', T_IDEM)
  end
  return {S_OK, ''}
end
local verify = string.byte(head, 2) == 118 -- "v"
local vat = c[3]
local enabled = ps == '1'
local pexp
if not enabled and ps ~= '0' then
  enabled = string.byte(ps) == 49 -- "1"
  pexp = string.sub(ps, 2)
end
-- The effective expiry is the code's own, or the project's when the code has none: a code of
-- an expired project without an expiry of its own is in state expired (CODE_EXPIRED).
-- PROJECT_EXPIRED is left for a project expiry passed while the code's own has not. An expiry
-- is unix seconds: it has passed once now (ms) reaches it times 1000.
local expiry = c[2] or pexp
local err = ''
if not enabled then
  err = 'PROJECT_DISABLED'
elseif c[5] == '1' then
  err = 'CODE_DISABLED'
elseif verify and vat then
  err = 'CODE_ALREADY_USED'
elseif not verify and not vat then
  err = 'CODE_ALREADY_UNUSED'
elseif expiry and tonumber(now) >= expiry * 1000 then
  err = 'CODE_EXPIRED'
elseif pexp and tonumber(now) >= pexp * 1000 then
  err = 'PROJECT_EXPIRED'
end
local by = c[4] or ''
if err == '' then
  -- The new version goes to Redis as a number; the event carries the version before, and its
  -- reader adds the one this change made.
  if verify then
    vat = now
    -- verified_by's length plus one, a uvarint of one or two bytes, then verified_by
    local b = string.byte(head, 16)
    if b < 128 then
      by = string.sub(head, 17, 15 + b)
    else
      by = string.sub(head, 18, 16 + b - 128 + string.byte(head, 17) * 128)
    end
    if by ~= '' then
      redis.call('HSET', KEYS[1], F_VAT, vat, F_BY, by, F_VER, (c[6] or 0) + 1)
    else
      redis.call('HSET', KEYS[1], F_VAT, vat, F_VER, (c[6] or 0) + 1)
      if c[4] then redis.call('HDEL', KEYS[1], F_BY) end
    end
  else
    vat = ''
    by = ''
    redis.call('HSET', KEYS[1], F_VER, (c[6] or 0) + 1)
    redis.call('HDEL', KEYS[1], F_VAT, F_BY)
  end
else
  vat = vat or ''
end
redis.call('RPUSH', KEYS[3], head .. id .. (c[5] or '0') .. err .. '|' .. (c[6] or '0') .. '|' .. vat .. '|' .. by)

if req then
  redis.call('SET', KEYS[4], req .. ' ' .. (vat == '' and '0' or vat) .. '|' .. now .. '|' .. err .. '|' .. id, 'EX', T_IDEM)
end
if err == '' then
  return {S_OK, id}
end
return {S_OK, id .. err .. '|' .. vat}
