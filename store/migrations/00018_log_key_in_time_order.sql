-- +goose Up

-- The log's primary key becomes (verified_at, id), the columns of verification_logs_time_idx
-- in its order, and that index goes: one index serves both the exactly-once key (the same
-- pair, so the same uniqueness: a redelivered event carries the same id and time) and the
-- console's search over every project, newest first. Every log row the consumer inserts
-- had an entry in both; now in one, at the index's right edge (time ascending), where an insert
-- finds its leaf without a descent. A lookup by id and time is one seek either way.
--
-- The key is rebuilt on every partition in this migration's transaction, under an exclusive
-- lock on the logs: the log writer's inserts wait (their events wait in Kafka), and so do the
-- reads of logs (a code's history, the console's log search) until it commits; verifies are
-- not concerned. On a large table run it in a maintenance window. It first takes the log
-- maintenance's advisory lock (store/partition.go, logMaintenanceLock), so a maintenance run
-- (which locks the default partition, then the parent) steps aside rather than deadlock with
-- it (which locks the parent, then the partitions).
SELECT pg_advisory_xact_lock(7017582852470960896); -- 0x6163766c6f677300, "acvlogs\0"
ALTER TABLE verification_logs DROP CONSTRAINT verification_logs_pkey;
DROP INDEX verification_logs_time_idx;
ALTER TABLE verification_logs ADD CONSTRAINT verification_logs_pkey PRIMARY KEY (verified_at, id);

-- +goose Down
ALTER TABLE verification_logs DROP CONSTRAINT verification_logs_pkey;
ALTER TABLE verification_logs ADD CONSTRAINT verification_logs_pkey PRIMARY KEY (id, verified_at);
CREATE INDEX verification_logs_time_idx ON verification_logs (verified_at, id);
