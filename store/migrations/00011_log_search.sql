-- +goose Up

-- The console's verification-log search filters by project within a time range, newest first.
-- Without this index a project's page reads every row of each day partition in the range (all
-- projects' logs) and sorts them; with it, each partition in range is one index seek merged in
-- order, as verification_logs_code_idx does for one code (TestSearchLogsPlan checks the plan).
CREATE INDEX verification_logs_project_idx ON verification_logs (project_id, verified_at DESC, id DESC);
-- The same search over every project (the console's logs page unfiltered, a filter by IP or
-- verifier): newest first from an index instead of sorting a whole day. The pipeline inserts
-- in nearly ascending time, so both indexes grow at one edge: a cheap insert.
-- Ascending: a newer row sorts last, so an insert lands on the index's rightmost leaf, which
-- PostgreSQL keeps at hand (no descent from the root); newest first is a backward scan.
CREATE INDEX verification_logs_time_idx ON verification_logs (verified_at, id);

-- When an API key last authenticated a request: the API processes remember it in memory and
-- flush it here in batches (api/httpapi/lastuse.go), moving it only forward.
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN last_used_at;
DROP INDEX verification_logs_time_idx;
DROP INDEX verification_logs_project_idx;
