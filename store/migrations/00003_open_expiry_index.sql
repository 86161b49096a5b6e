-- +goose Up

-- The expired filter: open codes whose own expiry has passed. Without this index, a page of
-- expired codes walks the project's open codes newest first until it finds some, which with a
-- few expired codes among millions means all of them.
CREATE INDEX codes_open_expiry_idx ON codes (project_id, expires_at)
    WHERE verified_at IS NULL AND NOT is_disabled AND expires_at IS NOT NULL;

-- +goose Down
DROP INDEX codes_open_expiry_idx;
