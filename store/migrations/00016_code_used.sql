-- +goose Up

-- A verify's update of its code row becomes a heap-only (HOT) update: no index of codes reads
-- verified_at any more, so the new row version stays on its page and no index gets an entry.
-- Before, the used/open conditions of four partial indexes named verified_at, and every verify
-- added an entry to each of them and to the primary and seq keys (PostgreSQL's largest cost
-- per verify). The codes currently used move to code_used instead, a narrow table kept in step
-- by statement triggers: a verify inserts one short row (its key and its time), a reactivate
-- deletes it. The used list and the recent verifications read it; the unused list walks the
-- project's codes by seq (codes_project_seq_key); the expired list starts from an expiry index
-- that does not name verified_at.
--
-- Writers of codes wait until the migration commits: a verify or reactivate committed between
-- the copy below and the triggers' creation would be missing from code_used, or left in it.
LOCK TABLE codes IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE code_used (
    project_id  uuid        NOT NULL,
    seq         bigint      NOT NULL,
    verified_at timestamptz NOT NULL,
    PRIMARY KEY (project_id, seq)
);
INSERT INTO code_used (project_id, seq, verified_at)
SELECT project_id, seq, verified_at FROM codes WHERE verified_at IS NOT NULL AND NOT is_disabled;
-- The statistics' recent verifications: the first entries, in order.
CREATE INDEX code_used_recent_idx ON code_used (project_id, verified_at DESC, seq DESC);

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

-- The same for code_values (migration 00012): its delete joins the deleted rows to the table.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION code_values_apply() RETURNS trigger
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

DROP INDEX codes_seq_used_idx;
DROP INDEX codes_seq_open_idx;
DROP INDEX codes_recent_used_idx;
DROP INDEX codes_open_expiry_idx;
-- The expired list's entry point: codes with an expiry of their own, enabled. Neither column
-- changes when a code is verified.
CREATE INDEX codes_expiry_idx ON codes (project_id, expires_at)
    WHERE expires_at IS NOT NULL AND NOT is_disabled;
-- Room on each page for the next version of its rows, so the first verify of a code freshly
-- generated can stay on its page too. It applies to pages written from now on; the pages of
-- codes generated before fill up, and their verifies are heap-only once pruning has made room.
ALTER TABLE codes SET (fillfactor = 90);

-- +goose Down
ALTER TABLE codes RESET (fillfactor);
DROP INDEX codes_expiry_idx;
CREATE INDEX codes_open_expiry_idx ON codes (project_id, expires_at)
    WHERE verified_at IS NULL AND NOT is_disabled AND expires_at IS NOT NULL;
CREATE INDEX codes_recent_used_idx ON codes (project_id, verified_at DESC, id DESC)
    WHERE verified_at IS NOT NULL AND NOT is_disabled;
CREATE INDEX codes_seq_open_idx ON codes (project_id, seq)
    WHERE verified_at IS NULL AND NOT is_disabled;
CREATE INDEX codes_seq_used_idx ON codes (project_id, seq)
    WHERE verified_at IS NOT NULL AND NOT is_disabled;
DROP TRIGGER codes_used_truncate ON codes;
DROP TRIGGER codes_used_delete ON codes;
DROP TRIGGER codes_used_update ON codes;
DROP TRIGGER codes_used_insert ON codes;
DROP FUNCTION code_used_apply();
DROP TABLE code_used;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION code_values_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO code_values (code_id, project_id, seq, code)
        SELECT id, project_id, seq, code FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM code_values v USING old_rows o WHERE v.code_id = o.id;
    ELSIF TG_OP = 'TRUNCATE' THEN
        TRUNCATE code_values;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
