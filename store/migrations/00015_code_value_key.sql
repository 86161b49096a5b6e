-- +goose Up

-- A code's value is unique in its project: the constraint moves from codes to code_values,
-- the write-once copy of each value (migration 00012), and lookups by value read it there.
-- Every verify updates its code's row, and an update that cannot stay on its page (its state
-- is in the conditions of the list indexes) adds an entry to every index of codes: the
-- (project_id, code) entry was the widest, about an eighth of PostgreSQL's CPU per verify.
-- A duplicate value now fails the statement that inserts it when the statement's trigger
-- copies it into code_values, instead of at the row; InsertCodes drops the values a project
-- holds before it inserts, under the project's lock, so it never meets one.
ALTER TABLE code_values ADD CONSTRAINT code_values_project_code_key UNIQUE (project_id, code);
ALTER TABLE codes DROP CONSTRAINT codes_project_code_key;

-- +goose Down
ALTER TABLE codes ADD CONSTRAINT codes_project_code_key UNIQUE (project_id, code);
ALTER TABLE code_values DROP CONSTRAINT code_values_project_code_key;
