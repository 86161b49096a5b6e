-- +goose Up

-- The operator console (internal/console): its accounts, their sessions, the throttle of
-- failed logins, and the admin audit log.

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

-- admin_login_throttle counts recent failed logins per subject: 'user:<SHA-256 of the username,
-- hex>' (hashed: a password typed into the username field is not kept) and 'ip:<client ip>'.
-- Usernames are counted whether or not an account has them, so a lockout
-- tells nothing about which accounts exist; this is why the counters are not columns of
-- admins. failures restart from 1 when the last failure is older than the console's window;
-- locked_until, once set, refuses every login of the subject until then, without checking
-- the password.
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

-- +goose Down
DROP TABLE IF EXISTS admin_audit_anchor;
DROP TABLE IF EXISTS admin_audit;
DROP FUNCTION IF EXISTS admin_audit_guard();
DROP TABLE IF EXISTS admin_sessions;
DROP TABLE IF EXISTS admin_login_throttle;
DROP TABLE IF EXISTS admins;
