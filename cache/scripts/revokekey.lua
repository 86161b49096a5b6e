-- revokekey.lua: revoke an API key in the mirror first, so the revocation takes effect on every
-- replica within the key cache's TTL even while Postgres is unreachable. An entry Redis does not
-- hold yet becomes a revoked stub that a later load completes (putkey.lua keeps it revoked).
--
-- KEYS[1] key hash acv:key:{<key id>}
--
-- Reply: { status }: S_OK.
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

redis.call('HDEL', KEYS[1], F_UNKNOWN)
redis.call('PERSIST', KEYS[1])
redis.call('HSET', KEYS[1], F_KEY_REVOKED, '1')
redis.call('HINCRBY', KEYS[1], F_VER, 1)
return {S_OK}
