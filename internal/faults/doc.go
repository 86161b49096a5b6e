// Package faults holds the fault tests of the audit pipeline with real processes: the service
// runs as `acv serve` child processes (built once per test binary), against a real Redis,
// PostgreSQL and Apache Kafka, and the tests kill those processes with SIGKILL, kill Kafka
// brokers, stop the whole Kafka cluster or PostgreSQL, and add and remove log writers, all
// under hundreds of concurrent signed verifies.
//
// Each test then asserts the pipeline's end-to-end promise in PostgreSQL: every verify answered
// success=true — and every verify whose answer was lost but which Redis redeemed — has exactly
// one success row in verification_logs, no other code has one, and no outbox entry is left
// in the Redis streams or pending in the relay group. Each prints the figures it saw (verifies
// acknowledged, rows, duplicates the sink removed, the outbox's peak, drain and failover
// times) with -v, and appends them to the file ACV_TEST_TIMINGS names, which `make test`
// prints.
//
// The tests run against the newest Kafka line (localenv.Kafka4) unless ACV_KAFKA_VERSIONS
// names releases (e.g. "3.9.2,4.4.0"). Tests that only kill acv processes or PostgreSQL share
// the test binary's one-node broker (testkit.RealKafka); the broker-kill and cluster-outage
// tests run a three-node cluster of their own (testkit.KafkaCluster: replication factor 3,
// min.insync.replicas=2).
//
// The package has no code besides this comment: everything is in its tests.
package faults
