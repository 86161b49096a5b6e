-- release.lua: give an outbox's lease up if we still hold it.
--
-- KEYS[1] the lease, in the outbox's slot
--
-- ARGV[1] our token
--
-- Reply: { status }: S_OK given up, S_REFUSED not ours (or no lease).
--
-- S_* are the prelude's (audit/outbox.go).

if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {S_OK}
end
return {S_REFUSED}
