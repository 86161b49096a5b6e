-- +goose Up

-- Substring search on code values (ILIKE '%...%') needs trigram indexes.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE projects (
    id          uuid        PRIMARY KEY,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    enabled     boolean     NOT NULL DEFAULT true,
    expires_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id           uuid             PRIMARY KEY,
    project_id   uuid             NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    -- Kept in clear: HMAC verification needs the secret itself.
    secret       text             NOT NULL CHECK (secret ~ '^[0-9a-f]{64}$'),
    revoked_at   timestamptz,
    rate_per_sec double precision CHECK (rate_per_sec > 0),
    burst        integer          CHECK (burst > 0),
    created_at   timestamptz      NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);

CREATE TABLE codes (
    id          uuid        PRIMARY KEY,
    project_id  uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    code        text        NOT NULL,
    is_disabled boolean     NOT NULL DEFAULT false,
    expires_at  timestamptz,
    verified_at timestamptz,
    verified_by text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- Version of the Redis state last applied; a snapshot is applied only when newer.
    version     bigint      NOT NULL DEFAULT 0,
    CONSTRAINT codes_project_code_key UNIQUE (project_id, code)
);
-- Paging newest first, unfiltered and per state (expired/unused share the "open" index:
-- which of the two a code is depends on the time of the request).
CREATE INDEX codes_page_idx ON codes (project_id, created_at DESC, id DESC);
CREATE INDEX codes_page_disabled_idx ON codes (project_id, created_at DESC, id DESC)
    WHERE is_disabled;
CREATE INDEX codes_page_used_idx ON codes (project_id, created_at DESC, id DESC)
    WHERE verified_at IS NOT NULL AND NOT is_disabled;
CREATE INDEX codes_page_open_idx ON codes (project_id, created_at DESC, id DESC)
    WHERE verified_at IS NULL AND NOT is_disabled;
-- Case-insensitive substring search; the project filter is applied on the bitmap.
CREATE INDEX codes_code_trgm_idx ON codes USING gin (code gin_trgm_ops);

CREATE TABLE verification_logs (
    -- The event id: a redelivered event conflicts and writes nothing.
    id          uuid        PRIMARY KEY,
    -- No foreign keys: the log is an append-only audit trail, and one event naming a missing
    -- code must not block the consumer's whole batch.
    code_id     uuid        NOT NULL,
    project_id  uuid        NOT NULL,
    action      text        NOT NULL,
    result      text        NOT NULL,
    reason      text,
    verified_by text,
    ip_address  text        NOT NULL DEFAULT '',
    verified_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX verification_logs_code_idx ON verification_logs (code_id, verified_at DESC, id DESC);

-- code_counts holds a project's code counts by kind, so statistics never scan codes:
-- kind 0 = open (neither disabled nor used; grouped by the code's own expires_at, so unused
-- vs expired is decided exactly at read time), 1 = used, 2 = disabled (expires_at NULL).
CREATE TABLE code_counts (
    project_id uuid        NOT NULL,
    kind       smallint    NOT NULL CHECK (kind IN (0, 1, 2)),
    expires_at timestamptz,
    n          bigint      NOT NULL,
    CONSTRAINT code_counts_key UNIQUE NULLS NOT DISTINCT (project_id, kind, expires_at),
    CHECK (kind = 0 OR expires_at IS NULL)
);

-- +goose StatementBegin
-- code_kind classifies a code row for code_counts: 2 disabled, 1 used, 0 open.
CREATE FUNCTION code_kind(is_disabled boolean, verified_at timestamptz) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (CASE WHEN is_disabled THEN 2 WHEN verified_at IS NOT NULL THEN 1 ELSE 0 END)::smallint
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- code_open_expiry is the expires_at a code row is counted under: its own, for open codes only.
CREATE FUNCTION code_open_expiry(is_disabled boolean, verified_at timestamptz, expires_at timestamptz)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN NOT is_disabled AND verified_at IS NULL THEN expires_at END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- code_counts_apply folds the rows one statement changed (COPY included) into code_counts. It
-- runs once per statement over the transition tables, aggregates by key, and upserts in key
-- order, so concurrent writers lock count rows in one order and cannot deadlock on them.
-- Rows whose count drops to 0 stay: deleting them would need locks outside that order.
CREATE FUNCTION code_counts_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO code_counts AS c (project_id, kind, expires_at, n)
        SELECT project_id, code_kind(is_disabled, verified_at),
               code_open_expiry(is_disabled, verified_at, expires_at), count(*)
        FROM new_rows
        GROUP BY 1, 2, 3
        ORDER BY 1, 2, 3
        ON CONFLICT ON CONSTRAINT code_counts_key DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO code_counts AS c (project_id, kind, expires_at, n)
        SELECT project_id, kind, expires_at, sum(d)
        FROM (
            SELECT project_id, code_kind(is_disabled, verified_at) AS kind,
                   code_open_expiry(is_disabled, verified_at, expires_at) AS expires_at, 1 AS d
            FROM new_rows
            UNION ALL
            SELECT project_id, code_kind(is_disabled, verified_at),
                   code_open_expiry(is_disabled, verified_at, expires_at), -1
            FROM old_rows
        ) delta
        GROUP BY 1, 2, 3
        HAVING sum(d) <> 0
        ORDER BY 1, 2, 3
        ON CONFLICT ON CONSTRAINT code_counts_key DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO code_counts AS c (project_id, kind, expires_at, n)
        SELECT project_id, code_kind(is_disabled, verified_at),
               code_open_expiry(is_disabled, verified_at, expires_at), -count(*)
        FROM old_rows
        GROUP BY 1, 2, 3
        ORDER BY 1, 2, 3
        ON CONFLICT ON CONSTRAINT code_counts_key DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'TRUNCATE' THEN
        DELETE FROM code_counts;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER codes_count_insert AFTER INSERT ON codes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_counts_apply();
CREATE TRIGGER codes_count_update AFTER UPDATE ON codes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_counts_apply();
CREATE TRIGGER codes_count_delete AFTER DELETE ON codes
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_counts_apply();
CREATE TRIGGER codes_count_truncate AFTER TRUNCATE ON codes
    FOR EACH STATEMENT EXECUTE FUNCTION code_counts_apply();

-- +goose Down
DROP TABLE IF EXISTS code_counts;
DROP TABLE IF EXISTS verification_logs;
DROP TABLE IF EXISTS codes;
DROP FUNCTION IF EXISTS code_counts_apply();
DROP FUNCTION IF EXISTS code_open_expiry(boolean, timestamptz, timestamptz);
DROP FUNCTION IF EXISTS code_kind(boolean, timestamptz);
DROP TABLE IF EXISTS api_keys;
DROP TABLE IF EXISTS projects;
