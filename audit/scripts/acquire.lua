-- acquire.lua: take or renew an outbox's lease: it is free, ours, or held by a previous run of
-- the same relay name (a restart takes its own outboxes back at once, not a lease later).
--
-- KEYS[1] the lease, in the outbox's slot
--
-- ARGV[1] our token (relay name "/" random part)
-- ARGV[2] the lease's lifetime, ms
-- ARGV[3] our name followed by "/"
--
-- Reply: { status }: S_OK held, S_REFUSED held by another relay.
--
-- S_* are the prelude's (audit/outbox.go).

local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] or string.sub(v, 1, #ARGV[3]) == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {S_OK}
end
return {S_REFUSED}
