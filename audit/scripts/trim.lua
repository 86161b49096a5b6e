-- trim.lua: remove the n entries a relay published from the head of an outbox, if they are
-- still its head. The entry at index 0 is the first one the relay read, and the entry at n-1 is
-- the last one it published. Entries are unique and leave only from the head, so a first entry
-- still in place means nothing was removed since the relay read, and the entries at 0..n-1 are
-- the ones it published. The last entry guards a list rebuilt after a failover that lost its
-- tail. Anything else (another relay trimmed meanwhile) refuses, and the relay reads again from
-- the head: at worst an entry is published twice, never removed unpublished.
--
-- KEYS[1] the outbox (a list)
--
-- ARGV[1] the first entry the relay read
-- ARGV[2] the last entry it published
-- ARGV[3] n, the entries it published
--
-- Reply: { status }: S_OK trimmed, S_REFUSED the head is not what the relay read.
--
-- S_* are the prelude's (audit/outbox.go).

local n = tonumber(ARGV[3])
if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] and redis.call('LINDEX', KEYS[1], n - 1) == ARGV[2] then
  redis.call('LTRIM', KEYS[1], n, -1)
  return {S_OK}
end
return {S_REFUSED}
