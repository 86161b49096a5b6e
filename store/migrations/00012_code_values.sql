-- +goose Up

-- Substring search moves off codes onto code_values, a copy of each code's value that is
-- written once, when the code is, and never updated. Every verify updates its code's row, and
-- an update that cannot stay on its page (HOT) adds an entry to every index of codes: with the
-- trigram index on codes, each verify also appended to its GIN pending list and rewrote the
-- index's meta page, about 30% of the WAL a verify cost. A code's value, project and seq
-- never change, so the copy needs no maintenance beyond insert and delete.
CREATE TABLE code_values (
    code_id    uuid PRIMARY KEY,
    project_id uuid   NOT NULL,
    seq        bigint NOT NULL, -- the code's, for a search's page order without codes
    code       text   NOT NULL
);
INSERT INTO code_values (code_id, project_id, seq, code) SELECT id, project_id, seq, code FROM codes;
CREATE INDEX code_values_trgm_idx ON code_values USING gin (code gin_trgm_ops);
DROP INDEX codes_code_trgm_idx;

-- Kept in step with codes by statement triggers over the transition tables, as code_counts
-- is: one set-based insert or delete per statement, whatever its size.
-- +goose StatementBegin
CREATE FUNCTION code_values_apply() RETURNS trigger
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

CREATE TRIGGER codes_values_insert AFTER INSERT ON codes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_values_apply();
CREATE TRIGGER codes_values_delete AFTER DELETE ON codes
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION code_values_apply();
CREATE TRIGGER codes_values_truncate AFTER TRUNCATE ON codes
    FOR EACH STATEMENT EXECUTE FUNCTION code_values_apply();

-- +goose Down
DROP TRIGGER codes_values_truncate ON codes;
DROP TRIGGER codes_values_delete ON codes;
DROP TRIGGER codes_values_insert ON codes;
DROP FUNCTION code_values_apply();
DROP TABLE code_values;
CREATE INDEX codes_code_trgm_idx ON codes USING gin (code gin_trgm_ops);
