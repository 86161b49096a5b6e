-- +goose Up

-- The schema of acv 0.1.0. Every later change of it is a new numbered migration beside this
-- file, with its upgrade path for the rows already stored; this file is never edited again
-- (store/testdata/schema.sql is what it gives, and TestSchema compares a fresh database to it).
-- It has no Down step: the way back from it is an empty database.

-- Substring search on code values (ILIKE '%...%') needs trigram indexes.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Every change of a project's flags (enabled, expires_at) increments version. Redis holds a
-- copy of the flags in every shard of the hot path; each copy carries the version it was taken
-- from, so an operator's write and a replica's load, arriving in any order, never put back an
-- older state. code_seq is the last number handed to one of the project's codes (codes.seq).
CREATE TABLE projects (
    id          uuid        PRIMARY KEY,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    enabled     boolean     NOT NULL DEFAULT true,
    expires_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    code_seq    bigint      NOT NULL DEFAULT 0,
    version     bigint      NOT NULL DEFAULT 1
);

CREATE TABLE api_keys (
    id           uuid             PRIMARY KEY,
    project_id   uuid             NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    -- Sealed (AES-256-GCM under a master key held outside the database, see internal/secrets),
    -- not hashed: HMAC verification needs the secret itself. See the column's comment.
    secret       text             NOT NULL CONSTRAINT api_keys_secret_check
                                  CHECK (secret ~ '^v1:[A-Za-z0-9_-]{1,32}:[A-Za-z0-9_-]+$' OR secret ~ '^[0-9a-f]{64}$'),
    revoked_at   timestamptz,
    rate_per_sec double precision CHECK (rate_per_sec > 0),
    burst        integer          CHECK (burst > 0),
    created_at   timestamptz      NOT NULL DEFAULT now(),
    -- Every change of a key (rate limit, revocation, secret) increments its version, so the key
    -- mirror in Redis keeps the newest state whatever order an operator's write and a
    -- replica's load arrive in.
    version      bigint           NOT NULL DEFAULT 1,
    -- When the key last authenticated a request: the API processes remember it in memory and
    -- flush it here in batches (api/httpapi/lastuse.go), moving it only forward.
    last_used_at timestamptz
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);
COMMENT ON COLUMN api_keys.secret IS
    'sealed HMAC secret v1:<kid>:<base64url(nonce|ciphertext|tag)>, additional data v1:<kid>:<id>; 64 hex in clear only before acv key rewrap';

-- A code's seq is a dense per-project number, so any page of a project's newest-first list is
-- an index seek instead of an OFFSET walk over millions of index entries: codes are never
-- deleted one by one, so a project's codes hold exactly the numbers 1..projects.code_seq, and
-- page N of the unfiltered list is "seq <= code_seq - offset ORDER BY seq DESC LIMIT size".
-- InsertCodes hands the numbers out under a lock on the project row, in input order, with a
-- created_at later than every earlier batch's, so seq order is exactly the order of the
-- contract ("created_at desc, id desc"). Every list, filtered or not, orders by seq.
--
-- No index of codes names a column a verify changes (verified_at, verified_by, version), so a
-- verify's update of its row is heap-only (HOT): the new row version stays on its page and no
-- index gets an entry. That is why the value's key and its search live in code_values and the
-- used codes in code_used, and why fillfactor leaves room on each page for the next version
-- of its rows, so that the first verify of a code freshly generated stays on its page too.
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
    seq         bigint      NOT NULL,
    CONSTRAINT codes_project_seq_key UNIQUE (project_id, seq)
) WITH (fillfactor = 90);
-- Paging newest first: unfiltered by seq range (codes_project_seq_key), the disabled codes by
-- walking their seq down here, the used ones through code_used, the unused ones by walking the
-- project's codes by seq.
CREATE INDEX codes_seq_disabled_idx ON codes (project_id, seq) WHERE is_disabled;
-- The expired list's entry point: codes with an expiry of their own, enabled. Neither column
-- changes when a code is verified. Without it, a page of expired codes walks the project's
-- codes newest first until it finds some, which with a few expired among millions is all.
CREATE INDEX codes_expiry_idx ON codes (project_id, expires_at)
    WHERE expires_at IS NOT NULL AND NOT is_disabled;

-- code_values is a copy of each code's value, written once, when the code is, and never
-- updated: it holds the value's uniqueness in its project and the substring search, which on
-- codes would put an index entry (and, for the trigram index, a GIN pending-list append) into
-- every verify that cannot stay on its page. A code's value, project and seq never change, so
-- the copy needs no maintenance beyond insert and delete. A duplicate value fails the
-- statement that inserts it when the statement's trigger copies it here; InsertCodes drops the
-- values a project holds before it inserts, under the project's lock, so it never meets one.
CREATE TABLE code_values (
    code_id    uuid   PRIMARY KEY,
    project_id uuid   NOT NULL,
    seq        bigint NOT NULL, -- the code's, for a search's page order without codes
    code       text   NOT NULL,
    CONSTRAINT code_values_project_code_key UNIQUE (project_id, code)
);
-- Case-insensitive substring search; the project filter is applied on the bitmap.
CREATE INDEX code_values_trgm_idx ON code_values USING gin (code gin_trgm_ops);

-- code_used holds the codes currently used (verified and not disabled): a verify inserts one
-- short row, a reactivate deletes it. The used list and the recent verifications read it.
CREATE TABLE code_used (
    project_id  uuid        NOT NULL,
    seq         bigint      NOT NULL,
    verified_at timestamptz NOT NULL,
    PRIMARY KEY (project_id, seq)
);
-- The statistics' recent verifications: the first entries, in order.
CREATE INDEX code_used_recent_idx ON code_used (project_id, verified_at DESC, seq DESC);

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

-- +goose StatementBegin
-- code_seq_assign numbers a code inserted without a seq (by SQL written outside InsertCodes,
-- such as a bulk COPY): it locks the project row as InsertCodes does and takes the next number.
-- A row that repeats a value the project already holds takes no number (seq 0): its statement
-- fails on code_values_project_code_key, and must not leave a gap. The value is looked up
-- through that key, in code_values (codes has none on it). Row by row, it is meant for small
-- imports; InsertCodes numbers its batches itself.
CREATE FUNCTION code_seq_assign() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM projects WHERE id = NEW.project_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE foreign_key_violation USING
            MESSAGE = format('project %s of code %L does not exist', NEW.project_id, NEW.code),
            CONSTRAINT = 'codes_project_id_fkey', TABLE = 'codes';
    END IF;
    IF EXISTS (SELECT 1 FROM code_values WHERE project_id = NEW.project_id AND code = NEW.code) THEN
        NEW.seq := 0;
        RETURN NEW;
    END IF;
    UPDATE projects SET code_seq = code_seq + 1 WHERE id = NEW.project_id
    RETURNING code_seq INTO NEW.seq;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- code_values_apply and code_used_apply keep their tables in step with codes by statement
-- triggers over the transition tables, as code_counts_apply does: one set-based insert or
-- delete per statement, whatever its size. Their statements that join a transition table run
-- through EXECUTE, for the reason code_used_apply gives.

-- +goose StatementBegin
CREATE FUNCTION code_values_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO code_values (code_id, project_id, seq, code)
        SELECT id, project_id, seq, code FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE 'DELETE FROM code_values v USING old_rows o WHERE v.code_id = o.id';
    ELSIF TG_OP = 'TRUNCATE' THEN
        TRUNCATE code_values;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION code_used_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- A code is used when verified and not disabled. An update removes the codes that left
    -- that state or were verified again (a new verified_at), then adds those that entered it
    -- or were verified again: two statements, so an insert never meets the key it replaces.
    --
    -- The statements that join the transition tables run through EXECUTE, planned for the
    -- rows at hand each time. A statement of a function is otherwise planned once per session
    -- and the plan kept until something invalidates it (an ANALYZE of a table it reads): one
    -- planned for a first batch of one row over an empty code_used (a nested loop over the
    -- transition tables, a scan of code_used) was kept for batches of thousands over a growing
    -- code_used, and a verify cost a hundred times more.
    IF TG_OP = 'INSERT' THEN
        INSERT INTO code_used (project_id, seq, verified_at)
        SELECT project_id, seq, verified_at FROM new_rows
        WHERE verified_at IS NOT NULL AND NOT is_disabled;
    ELSIF TG_OP = 'UPDATE' THEN
        EXECUTE 'DELETE FROM code_used u
            USING old_rows o JOIN new_rows n ON n.id = o.id
            WHERE u.project_id = o.project_id AND u.seq = o.seq
              AND o.verified_at IS NOT NULL AND NOT o.is_disabled
              AND (n.verified_at IS NULL OR n.is_disabled OR n.verified_at <> o.verified_at)';
        EXECUTE 'INSERT INTO code_used (project_id, seq, verified_at)
            SELECT n.project_id, n.seq, n.verified_at
            FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE n.verified_at IS NOT NULL AND NOT n.is_disabled
              AND (o.verified_at IS NULL OR o.is_disabled OR o.verified_at <> n.verified_at)
            ORDER BY n.project_id, n.seq';
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE 'DELETE FROM code_used u USING old_rows o
            WHERE u.project_id = o.project_id AND u.seq = o.seq';
    ELSIF TG_OP = 'TRUNCATE' THEN
        TRUNCATE code_used;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER codes_seq_assign BEFORE INSERT ON codes
    FOR EACH ROW WHEN (NEW.seq IS NULL) EXECUTE FUNCTION code_seq_assign();

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

CREATE TRIGGER codes_values_insert AFTER INSERT ON codes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_values_apply();
CREATE TRIGGER codes_values_delete AFTER DELETE ON codes
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_values_apply();
CREATE TRIGGER codes_values_truncate AFTER TRUNCATE ON codes
    FOR EACH STATEMENT EXECUTE FUNCTION code_values_apply();

CREATE TRIGGER codes_used_insert AFTER INSERT ON codes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_used_apply();
CREATE TRIGGER codes_used_update AFTER UPDATE ON codes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_used_apply();
CREATE TRIGGER codes_used_delete AFTER DELETE ON codes
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_used_apply();
CREATE TRIGGER codes_used_truncate AFTER TRUNCATE ON codes
    FOR EACH STATEMENT EXECUTE FUNCTION code_used_apply();

-- Code generation as named batches that run as jobs (internal/admin/batches.go). A batch row
-- is both the job (its status and progress, written by the instance that runs it, so any
-- instance can show it) and the name every code it generated answers to, so the batch can be
-- revoked as a whole.
--
-- status moves queued -> running -> done | failed | cancelled. heartbeat_at is refreshed
-- by the running instance every few seconds: a queued or running batch whose heartbeat is
-- stale lost its instance (a crash or a restart) and is marked failed by whoever reads it
-- next; it is not resumed, and the codes it made stay tied to it. cancel_requested is how an
-- operator on any instance asks the running one to stop.
CREATE TABLE code_batches (
    id               uuid        PRIMARY KEY,
    project_id       uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name             text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    requested        integer     NOT NULL CHECK (requested > 0),
    spec             jsonb       NOT NULL,
    status           text        NOT NULL DEFAULT 'queued'
                                 CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    done             integer     NOT NULL DEFAULT 0,
    error            text        NOT NULL DEFAULT '',
    created_by       text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    heartbeat_at     timestamptz NOT NULL DEFAULT now(),
    cancel_requested boolean     NOT NULL DEFAULT false,
    revoked_at       timestamptz,
    revoked_by       text        NOT NULL DEFAULT ''
);
CREATE INDEX code_batches_project_idx ON code_batches (project_id, created_at DESC);

-- code_batch_ranges ties codes to their batch by ranges of the project's dense code sequence
-- (codes.seq): each insert of a batch's codes takes consecutive numbers under the project's
-- lock, so one row a round of 10,000 or 50,000 codes is enough, and generation writes no extra
-- column or index entry per code. A batch's codes are found through codes_project_seq_key.
CREATE TABLE code_batch_ranges (
    batch_id   uuid   NOT NULL REFERENCES code_batches (id) ON DELETE CASCADE,
    project_id uuid   NOT NULL,
    seq_from   bigint NOT NULL,
    seq_to     bigint NOT NULL CHECK (seq_to >= seq_from),
    PRIMARY KEY (batch_id, seq_from)
);

-- verification_logs is range-partitioned by verified_at (the event's own time, UTC days), so
-- a day of logs is one partition: created ahead and dropped whole by the retention run
-- (store.MaintainLogPartitions; `acv logs maintain`), instead of billions of rows deleted one
-- by one. A DEFAULT partition catches a row outside every created day (a late event for a
-- dropped day, a clock far off); the maintenance moves such rows into their day's partition.
CREATE TABLE verification_logs (
    -- The event id; unique together with verified_at (the primary key, below).
    id          uuid        NOT NULL,
    -- No foreign keys: the log is an append-only audit trail, and one event naming a missing
    -- code must not block the log writer's whole batch. Attempts on values no code of the
    -- project has are logged too (CODE_NOT_FOUND), so operators see what was tried: such a row
    -- has no code_id, and code holds the value named.
    code_id     uuid,
    project_id  uuid        NOT NULL,
    action      text        NOT NULL,
    result      text        NOT NULL,
    reason      text,
    verified_by text,
    ip_address  text        NOT NULL DEFAULT '',
    verified_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    code        text
) PARTITION BY RANGE (verified_at);

-- Exactly-once: a unique constraint on a partitioned table must contain the partition key, so
-- the key is (verified_at, id) instead of (id). It still means "an event id is written once":
-- verified_at is the event's ts, stamped in the same atomic Redis script that assigns the event
-- id and stored with it in the outbox, and every redelivery (relay retry, Kafka redelivery,
-- log writer restart) carries those same bytes. So a redelivered event has the same
-- (verified_at, id), lands in the same partition, conflicts there, and writes nothing. A
-- separate dedup table of event ids would add a second unique index probe and a second table
-- to expire on every write; it buys nothing while ts is part of the immutable event.
--
-- Time first: the same index serves the console's search over every project, newest first (a
-- backward scan). The log writer inserts in nearly ascending time, so an insert lands on the
-- index's rightmost leaf, which PostgreSQL keeps at hand (no descent from the root).
ALTER TABLE verification_logs ADD CONSTRAINT verification_logs_pkey PRIMARY KEY (verified_at, id);
-- A code's history, newest first: one index seek per partition, merged in order.
CREATE INDEX verification_logs_code_idx ON verification_logs (code_id, verified_at DESC, id DESC);
-- The console's log search by project within a time range, newest first: each partition in
-- range is one index seek merged in order, instead of reading every project's rows of each day
-- and sorting them (TestSearchLogsPlan checks the plan).
CREATE INDEX verification_logs_project_idx ON verification_logs (project_id, verified_at DESC, id DESC);

CREATE TABLE verification_logs_default PARTITION OF verification_logs DEFAULT;

-- Today and the next 7 days (store.DefaultLogPartitionsAhead) get their partitions now, so the
-- logs written before the first maintenance run land in their day's partition.
-- +goose StatementBegin
DO $$
DECLARE
    today timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    d     timestamptz;
BEGIN
    FOR i IN 0..7 LOOP
        d := today + i * interval '1 day';
        EXECUTE format('CREATE TABLE %I PARTITION OF verification_logs FOR VALUES FROM (%L) TO (%L)',
                       'verification_logs_p' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD'),
                       to_char(d AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                       to_char((d + interval '1 day') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
    END LOOP;
END
$$;
-- +goose StatementEnd

-- Successful verifies per project and UTC hour, kept by the log writer in the same transaction
-- as the log rows it inserts (store.ApplyEvents: only rows newly inserted count, so a
-- redelivery adds nothing). The console's timeline reads a handful of rows here instead of
-- counting a day of verification_logs.
CREATE TABLE redemptions_hourly (
    project_id uuid        NOT NULL,
    hour       timestamptz NOT NULL,
    n          bigint      NOT NULL,
    PRIMARY KEY (project_id, hour)
);
CREATE INDEX redemptions_hourly_hour_idx ON redemptions_hourly (hour);

-- The operator console (internal/console): its accounts, their sessions, the throttle of
-- logins, and the admin audit log.

-- admins are the console's accounts. Usernames are stored lowercased, so "Alice" and "alice"
-- are one account. password_hash is an argon2id PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash);
-- no password is ever stored or logged in clear. An account created by `acv admin create` (or
-- by another admin) starts with must_change_password: its one-time password opens a session
-- that may only change the password or log out.
CREATE TABLE admins (
    id                   uuid        PRIMARY KEY,
    username             text        NOT NULL UNIQUE CHECK (username ~ '^[a-z0-9][a-z0-9._@-]{0,63}$'),
    password_hash        text        NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
    role                 text        NOT NULL CHECK (role IN ('viewer', 'support', 'operator', 'admin')),
    must_change_password boolean     NOT NULL DEFAULT true,
    disabled             boolean     NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now(),
    password_changed_at  timestamptz NOT NULL DEFAULT now()
);

-- admin_login_throttle counts recent password checks per subject (internal/console/throttle.go
-- names them: a username from one address, an address, a username from anywhere; a username
-- only as its SHA-256, so a password typed into the username field is not kept), whether or
-- not an account has the username, so a refusal tells nothing about which accounts exist: this
-- is why the counters are not columns of admins. locked_until, once set, refuses every login
-- of the subject until then, without checking the password.
CREATE TABLE admin_login_throttle (
    subject         text        PRIMARY KEY,
    failures        integer     NOT NULL,
    last_failure_at timestamptz NOT NULL,
    locked_until    timestamptz
);

-- admin_sessions: id is the SHA-256 of the session token; the token itself, sent in the
-- HttpOnly cookie, is never stored, so a copy of this table opens no session. The CSRF token
-- is derived from the session token (HMAC), so nothing of it is stored either. A session ends
-- at expires_at (absolute), after the console's idle timeout since last_seen_at, or when
-- revoked (logout, a password change, the account disabled).
CREATE TABLE admin_sessions (
    id           bytea       PRIMARY KEY CHECK (length(id) = 32),
    admin_id     uuid        NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    user_agent   text        NOT NULL DEFAULT '',
    client_ip    text        NOT NULL DEFAULT ''
);
CREATE INDEX admin_sessions_admin_idx ON admin_sessions (admin_id) WHERE revoked_at IS NULL;
CREATE INDEX admin_sessions_expires_idx ON admin_sessions (expires_at);

-- admin_audit is the admin audit log: every change made through the console (and every
-- export), by whom, when, from where, on what. It is append-only and hash-chained: each row's
-- hash is SHA-256 over prev_hash and the row's canonical bytes (store.AuditRecord.ComputeHash),
-- and prev_hash is the hash of the row before it, so changing, removing or inserting a row
-- breaks the chain at that row (console.VerifyChain finds it). detail never holds a secret or
-- a token. Rows are appended one at a time under an advisory lock, so the chain has no forks.
CREATE TABLE admin_audit (
    seq            bigserial   PRIMARY KEY,
    at             timestamptz NOT NULL,
    admin_id       uuid,
    admin_username text        NOT NULL,
    action         text        NOT NULL,
    target_kind    text        NOT NULL DEFAULT '',
    target_id      text        NOT NULL DEFAULT '',
    project_id     uuid,
    detail         jsonb       NOT NULL DEFAULT '{}',
    client_ip      text        NOT NULL DEFAULT '',
    prev_hash      bytea       NOT NULL CHECK (length(prev_hash) = 32),
    hash           bytea       NOT NULL CHECK (length(hash) = 32)
);
CREATE INDEX admin_audit_at_idx ON admin_audit (at);
CREATE INDEX admin_audit_project_idx ON admin_audit (project_id, seq) WHERE project_id IS NOT NULL;
CREATE INDEX admin_audit_admin_idx ON admin_audit (admin_username, seq);

-- admin_audit_anchor is the start of the chain: the prev_hash the oldest row kept must carry,
-- and the seq of the last row removed before it. It starts as 32 zero bytes and seq 0. A
-- retention run (store.PruneAdminAudit) deletes the oldest rows, a prefix of the chain, and in
-- the same transaction sets the anchor to the hash of the last row it deleted, which is the
-- prev_hash of the first row kept: verification starts from the anchor and still checks every
-- row kept. Only that run may change it.
CREATE TABLE admin_audit_anchor (
    one      boolean     PRIMARY KEY DEFAULT true CHECK (one),
    seq      bigint      NOT NULL,
    hash     bytea       NOT NULL CHECK (length(hash) = 32),
    moved_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO admin_audit_anchor (seq, hash) VALUES (0, decode(repeat('00', 32), 'hex'));

-- +goose StatementBegin
-- admin_audit_guard refuses every UPDATE, DELETE and TRUNCATE of the audit log and its anchor,
-- except the DELETE of the audit rows and the UPDATE of the anchor made by a retention run,
-- which sets acv.audit_retention to 'on' for its own transaction only (SET LOCAL). It guards
-- against mistakes and casual edits through the application's role; a superuser can still
-- disable the trigger, and that is what the hash chain is for.
CREATE FUNCTION admin_audit_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'TRUNCATE' AND coalesce(current_setting('acv.audit_retention', true), '') = 'on'
       AND ((TG_TABLE_NAME = 'admin_audit' AND TG_OP = 'DELETE')
            OR (TG_TABLE_NAME = 'admin_audit_anchor' AND TG_OP = 'UPDATE')) THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER admin_audit_append_only BEFORE UPDATE OR DELETE ON admin_audit
    FOR EACH ROW EXECUTE FUNCTION admin_audit_guard();
CREATE TRIGGER admin_audit_no_truncate BEFORE TRUNCATE ON admin_audit
    FOR EACH STATEMENT EXECUTE FUNCTION admin_audit_guard();
CREATE TRIGGER admin_audit_anchor_guard BEFORE UPDATE OR DELETE ON admin_audit_anchor
    FOR EACH ROW EXECUTE FUNCTION admin_audit_guard();
CREATE TRIGGER admin_audit_anchor_no_truncate BEFORE TRUNCATE ON admin_audit_anchor
    FOR EACH STATEMENT EXECUTE FUNCTION admin_audit_guard();
