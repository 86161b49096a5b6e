-- +goose Up

-- The log's primary key becomes (verified_at, id), the columns of verification_logs_time_idx
-- in its order, and that index goes: one index serves both the exactly-once key (the same
-- pair, so the same uniqueness: a redelivered event carries the same id and time) and the
-- console's search over every project, newest first. Every log row the consumer inserts
-- had an entry in both; now in one, at the index's right edge (time ascending), where an insert
-- finds its leaf without a descent. A lookup by id and time is one seek either way.
--
-- Rebuilding the key takes each partition's ACCESS EXCLUSIVE lock while its index is built:
-- the consumer's inserts wait (their events wait in Kafka), verifies are not concerned.
ALTER TABLE verification_logs DROP CONSTRAINT verification_logs_pkey;
DROP INDEX verification_logs_time_idx;
ALTER TABLE verification_logs ADD CONSTRAINT verification_logs_pkey PRIMARY KEY (verified_at, id);

-- +goose Down
ALTER TABLE verification_logs DROP CONSTRAINT verification_logs_pkey;
ALTER TABLE verification_logs ADD CONSTRAINT verification_logs_pkey PRIMARY KEY (id, verified_at);
CREATE INDEX verification_logs_time_idx ON verification_logs (verified_at, id);
