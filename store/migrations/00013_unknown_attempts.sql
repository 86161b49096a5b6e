-- +goose Up

-- Attempts on values no code of the project has are logged too (CODE_NOT_FOUND), so operators
-- see what was tried: such a row has no code_id, and code holds the value named. Both changes
-- are catalogue-only on the partitioned table: no row is rewritten or scanned.
ALTER TABLE verification_logs ALTER COLUMN code_id DROP NOT NULL;
ALTER TABLE verification_logs ADD COLUMN code text;

-- +goose Down
DELETE FROM verification_logs WHERE code_id IS NULL;
ALTER TABLE verification_logs DROP COLUMN code;
ALTER TABLE verification_logs ALTER COLUMN code_id SET NOT NULL;
