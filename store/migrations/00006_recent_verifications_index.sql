-- +goose Up

-- The statistics endpoint's recent_verifications: a project's codes currently used (verified,
-- not disabled), newest verified_at first. The index holds exactly those rows in that order,
-- so the query reads its first ten entries instead of sorting every used code of the project.
CREATE INDEX codes_recent_used_idx ON codes (project_id, verified_at DESC, id DESC)
    WHERE verified_at IS NOT NULL AND NOT is_disabled;

-- +goose Down
DROP INDEX codes_recent_used_idx;
