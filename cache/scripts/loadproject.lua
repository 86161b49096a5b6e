-- loadproject.lua: store a project's state loaded from Postgres unless Redis already holds
-- one, so a load racing an admin change never puts back the older state.
--
-- KEYS[1] project hash acv:{NN}:p:<project>
-- ARGV[1] "1" when enabled
-- ARGV[2] expires_at, unix s ("" = none)
--
-- Reply: 1 stored, 0 kept the entry Redis had.
--
-- Hash field names (F_*) and reply statuses (S_*) are locals that cache/layout.go prepends.

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], F_EN, ARGV[1], F_EXP, ARGV[2])
else
  redis.call('HSET', KEYS[1], F_EN, ARGV[1])
end
return 1
