-- +goose Up

-- Refused verifies per project and UTC hour beside the successful ones, kept by the consumer in
-- the same statement (store.ApplyEvents), so the console's charts show both outcomes from this
-- table. Hours before this migration count no refusals.
ALTER TABLE redemptions_hourly ADD COLUMN refused bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE redemptions_hourly DROP COLUMN refused;
