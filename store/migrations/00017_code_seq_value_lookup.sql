-- +goose Up

-- code_seq_assign (migration 00002) numbers a code inserted without a seq, and gives none to a
-- value its project already holds. It looked the value up in codes, which lost its
-- (project_id, code) key in migration 00015: each row inserted so walked its project's codes.
-- The value is looked up where its key now is, in code_values.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION code_seq_assign() RETURNS trigger
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION code_seq_assign() RETURNS trigger
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
