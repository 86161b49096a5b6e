-- +goose Up

-- Successful verifies per project and UTC hour, kept by the consumer in the same transaction
-- as the log rows it inserts (store.ApplyEvents: only rows newly inserted count, so a
-- redelivery adds nothing). The console's timeline reads a handful of rows here instead of
-- counting a day of verification_logs, which at 100,000 verifies a second is 8.6 billion rows.
CREATE TABLE redemptions_hourly (
    project_id uuid        NOT NULL,
    hour       timestamptz NOT NULL,
    n          bigint      NOT NULL,
    PRIMARY KEY (project_id, hour)
);
CREATE INDEX redemptions_hourly_hour_idx ON redemptions_hourly (hour);

-- The last day from the logs, so the timeline is whole from the start: the read one dashboard
-- page made before, once; older hours stay uncounted (a longer backfill would read every
-- partition kept).
INSERT INTO redemptions_hourly (project_id, hour, n)
SELECT project_id, date_trunc('hour', verified_at, 'UTC'), count(*)
FROM verification_logs
WHERE verified_at >= date_trunc('hour', now() - interval '24 hours', 'UTC') AND result = 'success' AND action = 'verify'
GROUP BY 1, 2;

-- +goose Down
DROP TABLE redemptions_hourly;
