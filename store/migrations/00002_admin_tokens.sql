-- +goose Up

-- admin_tokens are the admin API's tokens for the acv command and automation: each acts as
-- its owner's account with a role no higher than the owner's, until it expires or is revoked.
-- hash is the SHA-256 of the token's secret (32 random bytes); the secret, shown once at
-- creation, is never stored, so a copy of this table opens nothing. A request's token is
-- found by its hash.
CREATE TABLE admin_tokens (
    id           uuid        PRIMARY KEY,
    hash         bytea       NOT NULL UNIQUE CHECK (length(hash) = 32),
    name         text        NOT NULL,
    admin_id     uuid        NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    role         text        NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX admin_tokens_admin_idx ON admin_tokens (admin_id);
