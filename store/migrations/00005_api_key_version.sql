-- +goose Up

-- Every change of a key (rate limit, revocation) increments its version, so the key mirror in
-- Redis keeps the newest state whatever order an operator's write and a replica's load arrive in.
ALTER TABLE api_keys ADD COLUMN version bigint NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN version;
