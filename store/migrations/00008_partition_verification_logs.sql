-- +goose Up

-- verification_logs becomes a table range-partitioned by verified_at (the event's own time, UTC
-- days), so a day of logs is one partition: created ahead and dropped whole by the retention run
-- (store.MaintainLogPartitions; `acv logs maintain`), instead of billions of rows deleted one by
-- one. A DEFAULT partition catches a row outside every created day (a late event for a dropped
-- day, a clock far off); the maintenance moves such rows into their day's partition.
--
-- Exactly-once: a unique constraint on a partitioned table must contain the partition key, so
-- the key is (id, verified_at) instead of (id). It still means "an event id is written once":
-- verified_at is the event's ts, stamped in the same atomic Redis script that assigns the event
-- id and stored with it in the outbox, and every redelivery (relay retry, Kafka redelivery,
-- consumer restart) carries those same bytes. So a redelivered event has the same
-- (id, verified_at), lands in the same partition, conflicts there, and writes nothing. The
-- alternative, a separate dedup table of event ids, would add a second unique index probe and a
-- second table to expire on every write; it buys nothing while ts is part of the immutable event.
--
-- Rows already present are kept: the ones before today go into one history partition (its whole
-- range is dropped once its newest day passes the retention), today and the next 7 days get
-- daily partitions. The rows are copied and the indexes built after the copy, in this
-- migration's transaction, under an exclusive lock on the logs: on a large table run it in a
-- maintenance window.

ALTER TABLE verification_logs RENAME TO verification_logs_unpartitioned;
ALTER TABLE verification_logs_unpartitioned
    RENAME CONSTRAINT verification_logs_pkey TO verification_logs_unpartitioned_pkey;
ALTER INDEX verification_logs_code_idx RENAME TO verification_logs_unpartitioned_code_idx;

CREATE TABLE verification_logs (
    -- The event id; unique together with verified_at (see above).
    id          uuid        NOT NULL,
    -- No foreign keys: the log is an append-only audit trail, and one event naming a missing
    -- code must not block the consumer's whole batch.
    code_id     uuid        NOT NULL,
    project_id  uuid        NOT NULL,
    action      text        NOT NULL,
    result      text        NOT NULL,
    reason      text,
    verified_by text,
    ip_address  text        NOT NULL DEFAULT '',
    verified_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
) PARTITION BY RANGE (verified_at);

CREATE TABLE verification_logs_default PARTITION OF verification_logs DEFAULT;

-- +goose StatementBegin
DO $$
DECLARE
    today  timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    oldest timestamptz;
    d      timestamptz;
BEGIN
    SELECT date_trunc('day', min(verified_at) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    INTO oldest FROM verification_logs_unpartitioned;
    IF oldest < today THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF verification_logs FOR VALUES FROM (%L) TO (%L)',
                       'verification_logs_p' || to_char(oldest AT TIME ZONE 'UTC', 'YYYYMMDD'),
                       to_char(oldest AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                       to_char(today AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
    END IF;
    FOR i IN 0..7 LOOP
        d := today + i * interval '1 day';
        EXECUTE format('CREATE TABLE %I PARTITION OF verification_logs FOR VALUES FROM (%L) TO (%L)',
                       'verification_logs_p' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD'),
                       to_char(d AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                       to_char((d + interval '1 day') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
    END LOOP;
END
$$;
-- +goose StatementEnd

INSERT INTO verification_logs
    (id, code_id, project_id, action, result, reason, verified_by, ip_address, verified_at, received_at)
SELECT id, code_id, project_id, action, result, reason, verified_by, ip_address, verified_at, received_at
FROM verification_logs_unpartitioned;
DROP TABLE verification_logs_unpartitioned;

ALTER TABLE verification_logs ADD CONSTRAINT verification_logs_pkey PRIMARY KEY (id, verified_at);
-- A code's history, newest first: one index seek per partition, merged in order.
CREATE INDEX verification_logs_code_idx ON verification_logs (code_id, verified_at DESC, id DESC);

-- +goose Down
-- Back to one plain table, keeping every row. An event id written twice with two times cannot
-- happen (see Up); if it did, the copy keeps the first.
ALTER TABLE verification_logs RENAME TO verification_logs_partitioned;
ALTER TABLE verification_logs_partitioned
    RENAME CONSTRAINT verification_logs_pkey TO verification_logs_partitioned_pkey;
ALTER INDEX verification_logs_code_idx RENAME TO verification_logs_partitioned_code_idx;
CREATE TABLE verification_logs (
    id          uuid        PRIMARY KEY,
    code_id     uuid        NOT NULL,
    project_id  uuid        NOT NULL,
    action      text        NOT NULL,
    result      text        NOT NULL,
    reason      text,
    verified_by text,
    ip_address  text        NOT NULL DEFAULT '',
    verified_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO verification_logs
    (id, code_id, project_id, action, result, reason, verified_by, ip_address, verified_at, received_at)
SELECT id, code_id, project_id, action, result, reason, verified_by, ip_address, verified_at, received_at
FROM verification_logs_partitioned
ORDER BY verified_at
ON CONFLICT (id) DO NOTHING;
DROP TABLE verification_logs_partitioned;
CREATE INDEX verification_logs_code_idx ON verification_logs (code_id, verified_at DESC, id DESC);
