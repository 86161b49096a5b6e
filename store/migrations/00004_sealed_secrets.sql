-- +goose Up

-- API-key secrets are sealed (AES-256-GCM under a master key held outside the database, see
-- internal/secrets): v1:<master key id>:<base64url of nonce|ciphertext|tag>. Keys issued
-- before keep their 64-hex secret in clear until `acv key rewrap` seals them.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_secret_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_secret_check
    CHECK (secret ~ '^v1:[A-Za-z0-9_-]{1,32}:[A-Za-z0-9_-]+$' OR secret ~ '^[0-9a-f]{64}$');
COMMENT ON COLUMN api_keys.secret IS
    'sealed HMAC secret v1:<kid>:<base64url(nonce|ciphertext|tag)>, additional data v1:<kid>:<id>; 64 hex in clear only before acv key rewrap';

-- +goose Down
-- Sealed secrets cannot be used by the schema before; the old check is restored for new rows
-- only (NOT VALID), so the down migration itself does not fail on sealed rows.
COMMENT ON COLUMN api_keys.secret IS NULL;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_secret_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_secret_check CHECK (secret ~ '^[0-9a-f]{64}$') NOT VALID;
