-- putproject.lua: store one shard's copy of a project's state unless the copy Redis holds was
-- taken from a newer version of the projects row. Operator commands write every shard with the
-- row's version after changing it; a verify that finds its shard's copy missing loads the row
-- and writes that shard. Whatever order the two arrive in, an older write never wins; an equal
-- version carries the same state, so writing it again changes nothing.
--
-- KEYS[1] project copy acv:{T}:p:<project>
-- ARGV[1] "1" when enabled
-- ARGV[2] expires_at, unix s ("" = none)
-- ARGV[3] version of the projects row (0: unversioned, replaced by any loaded row)
--
-- Reply: { status }: S_OK stored, S_UNCHANGED kept the newer copy Redis had.
--
-- F_*, S_*, T_* and the functions used are the prelude's (prelude.lua, cache/layout.go).

local v = redis.call('HGET', KEYS[1], F_VER)
if v and tonumber(v) > tonumber(ARGV[3]) then
  return {S_UNCHANGED}
end
redis.call('DEL', KEYS[1])
-- F_EN and F_EXP for readers of the fields (authentication), F_PSTATE, both in one, for apply.lua.
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], F_EN, ARGV[1], F_EXP, ARGV[2], F_PSTATE, ARGV[1] .. ARGV[2], F_VER, ARGV[3])
else
  redis.call('HSET', KEYS[1], F_EN, ARGV[1], F_PSTATE, ARGV[1], F_VER, ARGV[3])
end
return {S_OK}
