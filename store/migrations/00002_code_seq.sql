-- +goose Up

-- A dense per-project sequence number on codes, so any page of a project's newest-first list is
-- an index seek instead of an OFFSET walk over millions of index entries: codes are never
-- deleted one by one, so a project's codes hold exactly the numbers 1..projects.code_seq, and
-- page N of the unfiltered list is "seq <= code_seq - offset ORDER BY seq DESC LIMIT size".
--
-- InsertCodes hands the numbers out under a lock on the project row, in input order, with a
-- created_at later than every earlier batch's, so seq order is exactly the order of the
-- contract ("created_at desc, id desc"). Every list, filtered or not, orders by seq.
--
-- This migration rewrites every code row and holds an exclusive lock on codes meanwhile: on a
-- large table, run it in a maintenance window (measured: 61 s for 2 million codes on two
-- cores, TestMigrateScale in store/scale_test.go).

ALTER TABLE projects ADD COLUMN code_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE codes ADD COLUMN seq bigint;

-- The created_at paging indexes are replaced by seq ones below. Drop them, and the trigram
-- index (rebuilt in bulk afterwards), before the backfill so it does not update them row by
-- row; and keep the statistics trigger out of it: seq is not counted, every delta would be 0.
DROP INDEX codes_page_idx;
DROP INDEX codes_page_disabled_idx;
DROP INDEX codes_page_used_idx;
DROP INDEX codes_page_open_idx;
DROP INDEX codes_code_trgm_idx;
ALTER TABLE codes DISABLE TRIGGER codes_count_update;

UPDATE codes c SET seq = n.seq
FROM (SELECT id, row_number() OVER (PARTITION BY project_id ORDER BY created_at, id) AS seq
      FROM codes) n
WHERE c.id = n.id;

ALTER TABLE codes ENABLE TRIGGER codes_count_update;

UPDATE projects p SET code_seq = m.n
FROM (SELECT project_id, max(seq) AS n FROM codes GROUP BY project_id) m
WHERE p.id = m.project_id;

ALTER TABLE codes ALTER COLUMN seq SET NOT NULL;

-- Paging newest first: unfiltered by seq range, per state (expired/unused share the "open"
-- index: which of the two a code is depends on the time of the request) by walking seq down.
ALTER TABLE codes ADD CONSTRAINT codes_project_seq_key UNIQUE (project_id, seq);
CREATE INDEX codes_seq_disabled_idx ON codes (project_id, seq) WHERE is_disabled;
CREATE INDEX codes_seq_used_idx ON codes (project_id, seq)
    WHERE verified_at IS NOT NULL AND NOT is_disabled;
CREATE INDEX codes_seq_open_idx ON codes (project_id, seq)
    WHERE verified_at IS NULL AND NOT is_disabled;
-- Case-insensitive substring search; the project filter is applied on the bitmap.
CREATE INDEX codes_code_trgm_idx ON codes USING gin (code gin_trgm_ops);

-- +goose StatementBegin
-- code_seq_assign numbers a code inserted without a seq (by SQL written outside InsertCodes,
-- such as a bulk COPY): it locks the project row as InsertCodes does and takes the next number.
-- A row that repeats a value the project already holds takes no number (seq 0): it is about to
-- be rejected or skipped by the unique constraint on the value, and must not leave a gap.
-- Row by row, it is meant for small imports; InsertCodes numbers its batches itself.
CREATE FUNCTION code_seq_assign() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM projects WHERE id = NEW.project_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE foreign_key_violation USING
            MESSAGE = format('project %s of code %L does not exist', NEW.project_id, NEW.code),
            CONSTRAINT = 'codes_project_id_fkey', TABLE = 'codes';
    END IF;
    IF EXISTS (SELECT 1 FROM codes WHERE project_id = NEW.project_id AND code = NEW.code) THEN
        NEW.seq := 0;
        RETURN NEW;
    END IF;
    UPDATE projects SET code_seq = code_seq + 1 WHERE id = NEW.project_id
    RETURNING code_seq INTO NEW.seq;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER codes_seq_assign BEFORE INSERT ON codes
    FOR EACH ROW WHEN (NEW.seq IS NULL) EXECUTE FUNCTION code_seq_assign();

-- +goose Down
DROP TRIGGER IF EXISTS codes_seq_assign ON codes;
DROP FUNCTION IF EXISTS code_seq_assign();
DROP INDEX IF EXISTS codes_seq_disabled_idx;
DROP INDEX IF EXISTS codes_seq_used_idx;
DROP INDEX IF EXISTS codes_seq_open_idx;
ALTER TABLE codes DROP CONSTRAINT IF EXISTS codes_project_seq_key;
ALTER TABLE codes DROP COLUMN IF EXISTS seq;
ALTER TABLE projects DROP COLUMN IF EXISTS code_seq;
CREATE INDEX codes_page_idx ON codes (project_id, created_at DESC, id DESC);
CREATE INDEX codes_page_disabled_idx ON codes (project_id, created_at DESC, id DESC)
    WHERE is_disabled;
CREATE INDEX codes_page_used_idx ON codes (project_id, created_at DESC, id DESC)
    WHERE verified_at IS NOT NULL AND NOT is_disabled;
CREATE INDEX codes_page_open_idx ON codes (project_id, created_at DESC, id DESC)
    WHERE verified_at IS NULL AND NOT is_disabled;
