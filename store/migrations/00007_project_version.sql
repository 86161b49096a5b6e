-- +goose Up

-- Every change of a project's flags (enabled, expiry) increments its version. Redis holds a copy
-- of the flags in every shard of the hot path; each copy carries the version it was taken from,
-- so an operator's write and a replica's load, arriving in any order, never put back an older
-- state.
ALTER TABLE projects ADD COLUMN version bigint NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE projects DROP COLUMN version;
