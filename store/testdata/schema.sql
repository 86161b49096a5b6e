-- The schema store/migrations gives, as pg_dump --schema-only writes it, without the
-- dump's settings and verification_logs' day partitions. Written by
-- go test ./store -run TestSchema -update-schema; review its diff with the migration.

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';

CREATE FUNCTION public.admin_audit_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.code_counts_apply() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.code_kind(is_disabled boolean, verified_at timestamp with time zone) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT (CASE WHEN is_disabled THEN 2 WHEN verified_at IS NOT NULL THEN 1 ELSE 0 END)::smallint
$$;

CREATE FUNCTION public.code_open_expiry(is_disabled boolean, verified_at timestamp with time zone, expires_at timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN NOT is_disabled AND verified_at IS NULL THEN expires_at END
$$;

CREATE FUNCTION public.code_seq_assign() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.code_used_apply() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.code_values_apply() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE TABLE public.admin_audit (
    seq bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    admin_id uuid,
    admin_username text NOT NULL,
    action text NOT NULL,
    target_kind text DEFAULT ''::text NOT NULL,
    target_id text DEFAULT ''::text NOT NULL,
    project_id uuid,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    client_ip text DEFAULT ''::text NOT NULL,
    prev_hash bytea NOT NULL,
    hash bytea NOT NULL,
    CONSTRAINT admin_audit_hash_check CHECK ((length(hash) = 32)),
    CONSTRAINT admin_audit_prev_hash_check CHECK ((length(prev_hash) = 32))
);

CREATE TABLE public.admin_audit_anchor (
    one boolean DEFAULT true NOT NULL,
    seq bigint NOT NULL,
    hash bytea NOT NULL,
    moved_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT admin_audit_anchor_hash_check CHECK ((length(hash) = 32)),
    CONSTRAINT admin_audit_anchor_one_check CHECK (one)
);

CREATE SEQUENCE public.admin_audit_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.admin_audit_seq_seq OWNED BY public.admin_audit.seq;

CREATE TABLE public.admin_login_throttle (
    subject text NOT NULL,
    failures integer NOT NULL,
    last_failure_at timestamp with time zone NOT NULL,
    locked_until timestamp with time zone
);

CREATE TABLE public.admin_sessions (
    id bytea NOT NULL,
    admin_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    user_agent text DEFAULT ''::text NOT NULL,
    client_ip text DEFAULT ''::text NOT NULL,
    CONSTRAINT admin_sessions_id_check CHECK ((length(id) = 32))
);

CREATE TABLE public.admin_tokens (
    id uuid NOT NULL,
    hash bytea NOT NULL,
    name text NOT NULL,
    admin_id uuid NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    CONSTRAINT admin_tokens_hash_check CHECK ((length(hash) = 32))
);

CREATE TABLE public.admins (
    id uuid NOT NULL,
    username text NOT NULL,
    password_hash text NOT NULL,
    role text NOT NULL,
    must_change_password boolean DEFAULT true NOT NULL,
    disabled boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    password_changed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT admins_password_hash_check CHECK ((password_hash ~~ '$argon2id$%'::text)),
    CONSTRAINT admins_role_check CHECK ((role = ANY (ARRAY['viewer'::text, 'support'::text, 'operator'::text, 'admin'::text]))),
    CONSTRAINT admins_username_check CHECK ((username ~ '^[a-z0-9][a-z0-9._@-]{0,63}$'::text))
);

CREATE TABLE public.api_keys (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    secret text NOT NULL,
    revoked_at timestamp with time zone,
    rate_per_sec double precision,
    burst integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    last_used_at timestamp with time zone,
    CONSTRAINT api_keys_burst_check CHECK ((burst > 0)),
    CONSTRAINT api_keys_rate_per_sec_check CHECK ((rate_per_sec > (0)::double precision)),
    CONSTRAINT api_keys_secret_check CHECK (((secret ~ '^v1:[A-Za-z0-9_-]{1,32}:[A-Za-z0-9_-]+$'::text) OR (secret ~ '^[0-9a-f]{64}$'::text)))
);

COMMENT ON COLUMN public.api_keys.secret IS 'sealed HMAC secret v1:<kid>:<base64url(nonce|ciphertext|tag)>, additional data v1:<kid>:<id>; 64 hex in clear only before acv key rewrap';

CREATE TABLE public.code_batch_ranges (
    batch_id uuid NOT NULL,
    project_id uuid NOT NULL,
    seq_from bigint NOT NULL,
    seq_to bigint NOT NULL,
    CONSTRAINT code_batch_ranges_check CHECK ((seq_to >= seq_from))
);

CREATE TABLE public.code_batches (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    name text NOT NULL,
    requested integer NOT NULL,
    spec jsonb NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    done integer DEFAULT 0 NOT NULL,
    error text DEFAULT ''::text NOT NULL,
    created_by text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    cancel_requested boolean DEFAULT false NOT NULL,
    revoked_at timestamp with time zone,
    revoked_by text DEFAULT ''::text NOT NULL,
    CONSTRAINT code_batches_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
    CONSTRAINT code_batches_requested_check CHECK ((requested > 0)),
    CONSTRAINT code_batches_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'done'::text, 'failed'::text, 'cancelled'::text])))
);

CREATE TABLE public.code_counts (
    project_id uuid NOT NULL,
    kind smallint NOT NULL,
    expires_at timestamp with time zone,
    n bigint NOT NULL,
    CONSTRAINT code_counts_check CHECK (((kind = 0) OR (expires_at IS NULL))),
    CONSTRAINT code_counts_kind_check CHECK ((kind = ANY (ARRAY[0, 1, 2])))
);

CREATE TABLE public.code_used (
    project_id uuid NOT NULL,
    seq bigint NOT NULL,
    verified_at timestamp with time zone NOT NULL
);

CREATE TABLE public.code_values (
    code_id uuid NOT NULL,
    project_id uuid NOT NULL,
    seq bigint NOT NULL,
    code text NOT NULL
);

CREATE TABLE public.codes (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    code text NOT NULL,
    is_disabled boolean DEFAULT false NOT NULL,
    expires_at timestamp with time zone,
    verified_at timestamp with time zone,
    verified_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    seq bigint NOT NULL
)
WITH (fillfactor='90');

CREATE TABLE public.projects (
    id uuid NOT NULL,
    name text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    code_seq bigint DEFAULT 0 NOT NULL,
    version bigint DEFAULT 1 NOT NULL
);

CREATE TABLE public.redemptions_hourly (
    project_id uuid NOT NULL,
    hour timestamp with time zone NOT NULL,
    n bigint NOT NULL,
    refused bigint DEFAULT 0 NOT NULL
);

CREATE TABLE public.verification_logs (
    id uuid NOT NULL,
    code_id uuid,
    project_id uuid NOT NULL,
    action text NOT NULL,
    result text NOT NULL,
    reason text,
    verified_by text,
    ip_address text DEFAULT ''::text NOT NULL,
    verified_at timestamp with time zone NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    code text
)
PARTITION BY RANGE (verified_at);

CREATE TABLE public.verification_logs_default (
    id uuid NOT NULL,
    code_id uuid,
    project_id uuid NOT NULL,
    action text NOT NULL,
    result text NOT NULL,
    reason text,
    verified_by text,
    ip_address text DEFAULT ''::text NOT NULL,
    verified_at timestamp with time zone NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    code text
);

ALTER TABLE ONLY public.verification_logs ATTACH PARTITION public.verification_logs_default DEFAULT;

ALTER TABLE ONLY public.admin_audit ALTER COLUMN seq SET DEFAULT nextval('public.admin_audit_seq_seq'::regclass);

ALTER TABLE ONLY public.admin_audit_anchor
    ADD CONSTRAINT admin_audit_anchor_pkey PRIMARY KEY (one);

ALTER TABLE ONLY public.admin_audit
    ADD CONSTRAINT admin_audit_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.admin_login_throttle
    ADD CONSTRAINT admin_login_throttle_pkey PRIMARY KEY (subject);

ALTER TABLE ONLY public.admin_sessions
    ADD CONSTRAINT admin_sessions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.admin_tokens
    ADD CONSTRAINT admin_tokens_hash_key UNIQUE (hash);

ALTER TABLE ONLY public.admin_tokens
    ADD CONSTRAINT admin_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.admins
    ADD CONSTRAINT admins_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.admins
    ADD CONSTRAINT admins_username_key UNIQUE (username);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.code_batch_ranges
    ADD CONSTRAINT code_batch_ranges_pkey PRIMARY KEY (batch_id, seq_from);

ALTER TABLE ONLY public.code_batches
    ADD CONSTRAINT code_batches_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.code_counts
    ADD CONSTRAINT code_counts_key UNIQUE NULLS NOT DISTINCT (project_id, kind, expires_at);

ALTER TABLE ONLY public.code_used
    ADD CONSTRAINT code_used_pkey PRIMARY KEY (project_id, seq);

ALTER TABLE ONLY public.code_values
    ADD CONSTRAINT code_values_pkey PRIMARY KEY (code_id);

ALTER TABLE ONLY public.code_values
    ADD CONSTRAINT code_values_project_code_key UNIQUE (project_id, code);

ALTER TABLE ONLY public.codes
    ADD CONSTRAINT codes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.codes
    ADD CONSTRAINT codes_project_seq_key UNIQUE (project_id, seq);

ALTER TABLE ONLY public.projects
    ADD CONSTRAINT projects_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.redemptions_hourly
    ADD CONSTRAINT redemptions_hourly_pkey PRIMARY KEY (project_id, hour);

ALTER TABLE ONLY public.verification_logs
    ADD CONSTRAINT verification_logs_pkey PRIMARY KEY (verified_at, id);

ALTER TABLE ONLY public.verification_logs_default
    ADD CONSTRAINT verification_logs_default_pkey PRIMARY KEY (verified_at, id);

CREATE INDEX admin_audit_admin_idx ON public.admin_audit USING btree (admin_username, seq);

CREATE INDEX admin_audit_at_idx ON public.admin_audit USING btree (at);

CREATE INDEX admin_audit_project_idx ON public.admin_audit USING btree (project_id, seq) WHERE (project_id IS NOT NULL);

CREATE INDEX admin_sessions_admin_idx ON public.admin_sessions USING btree (admin_id) WHERE (revoked_at IS NULL);

CREATE INDEX admin_sessions_expires_idx ON public.admin_sessions USING btree (expires_at);

CREATE INDEX admin_tokens_admin_idx ON public.admin_tokens USING btree (admin_id);

CREATE INDEX api_keys_project_idx ON public.api_keys USING btree (project_id);

CREATE INDEX code_batches_project_idx ON public.code_batches USING btree (project_id, created_at DESC);

CREATE INDEX code_used_recent_idx ON public.code_used USING btree (project_id, verified_at DESC, seq DESC);

CREATE INDEX code_values_trgm_idx ON public.code_values USING gin (code public.gin_trgm_ops);

CREATE INDEX codes_expiry_idx ON public.codes USING btree (project_id, expires_at) WHERE ((expires_at IS NOT NULL) AND (NOT is_disabled));

CREATE INDEX codes_seq_disabled_idx ON public.codes USING btree (project_id, seq) WHERE is_disabled;

CREATE INDEX redemptions_hourly_hour_idx ON public.redemptions_hourly USING btree (hour);

CREATE INDEX verification_logs_code_idx ON ONLY public.verification_logs USING btree (code_id, verified_at DESC, id DESC);

CREATE INDEX verification_logs_default_code_id_verified_at_id_idx ON public.verification_logs_default USING btree (code_id, verified_at DESC, id DESC);

CREATE INDEX verification_logs_project_idx ON ONLY public.verification_logs USING btree (project_id, verified_at DESC, id DESC);

CREATE INDEX verification_logs_default_project_id_verified_at_id_idx ON public.verification_logs_default USING btree (project_id, verified_at DESC, id DESC);

ALTER INDEX public.verification_logs_code_idx ATTACH PARTITION public.verification_logs_default_code_id_verified_at_id_idx;

ALTER INDEX public.verification_logs_pkey ATTACH PARTITION public.verification_logs_default_pkey;

ALTER INDEX public.verification_logs_project_idx ATTACH PARTITION public.verification_logs_default_project_id_verified_at_id_idx;

CREATE TRIGGER admin_audit_anchor_guard BEFORE DELETE OR UPDATE ON public.admin_audit_anchor FOR EACH ROW EXECUTE FUNCTION public.admin_audit_guard();

CREATE TRIGGER admin_audit_anchor_no_truncate BEFORE TRUNCATE ON public.admin_audit_anchor FOR EACH STATEMENT EXECUTE FUNCTION public.admin_audit_guard();

CREATE TRIGGER admin_audit_append_only BEFORE DELETE OR UPDATE ON public.admin_audit FOR EACH ROW EXECUTE FUNCTION public.admin_audit_guard();

CREATE TRIGGER admin_audit_no_truncate BEFORE TRUNCATE ON public.admin_audit FOR EACH STATEMENT EXECUTE FUNCTION public.admin_audit_guard();

CREATE TRIGGER codes_count_delete AFTER DELETE ON public.codes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.code_counts_apply();

CREATE TRIGGER codes_count_insert AFTER INSERT ON public.codes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.code_counts_apply();

CREATE TRIGGER codes_count_truncate AFTER TRUNCATE ON public.codes FOR EACH STATEMENT EXECUTE FUNCTION public.code_counts_apply();

CREATE TRIGGER codes_count_update AFTER UPDATE ON public.codes REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.code_counts_apply();

CREATE TRIGGER codes_seq_assign BEFORE INSERT ON public.codes FOR EACH ROW WHEN ((new.seq IS NULL)) EXECUTE FUNCTION public.code_seq_assign();

CREATE TRIGGER codes_used_delete AFTER DELETE ON public.codes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.code_used_apply();

CREATE TRIGGER codes_used_insert AFTER INSERT ON public.codes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.code_used_apply();

CREATE TRIGGER codes_used_truncate AFTER TRUNCATE ON public.codes FOR EACH STATEMENT EXECUTE FUNCTION public.code_used_apply();

CREATE TRIGGER codes_used_update AFTER UPDATE ON public.codes REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.code_used_apply();

CREATE TRIGGER codes_values_delete AFTER DELETE ON public.codes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.code_values_apply();

CREATE TRIGGER codes_values_insert AFTER INSERT ON public.codes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.code_values_apply();

CREATE TRIGGER codes_values_truncate AFTER TRUNCATE ON public.codes FOR EACH STATEMENT EXECUTE FUNCTION public.code_values_apply();

ALTER TABLE ONLY public.admin_sessions
    ADD CONSTRAINT admin_sessions_admin_id_fkey FOREIGN KEY (admin_id) REFERENCES public.admins(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.admin_tokens
    ADD CONSTRAINT admin_tokens_admin_id_fkey FOREIGN KEY (admin_id) REFERENCES public.admins(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_project_id_fkey FOREIGN KEY (project_id) REFERENCES public.projects(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.code_batch_ranges
    ADD CONSTRAINT code_batch_ranges_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES public.code_batches(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.code_batches
    ADD CONSTRAINT code_batches_project_id_fkey FOREIGN KEY (project_id) REFERENCES public.projects(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.codes
    ADD CONSTRAINT codes_project_id_fkey FOREIGN KEY (project_id) REFERENCES public.projects(id) ON DELETE CASCADE;
