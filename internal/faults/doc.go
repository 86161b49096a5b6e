// Package faults holds the fault tests of the audit pipeline with real processes: `acv serve`
// children against a real Redis, PostgreSQL and Apache Kafka, under hundreds of concurrent
// signed verifies, while the tests kill those processes, Kafka brokers, the whole Kafka
// cluster or PostgreSQL, and add and remove log writers.
//
// Each test then asserts the pipeline's promise in PostgreSQL: every verify answered
// success=true, or lost but redeemed in Redis, has exactly one success row in
// verification_logs, no other code has one, and no outbox entry is left. Each reports its
// figures with -v and to the file ACV_TEST_TIMINGS names.
//
// The tests run against localenv.Kafka4 unless ACV_KAFKA_VERSIONS names releases. Tests that
// kill acv processes or PostgreSQL share the binary's one-node broker (testkit.RealKafka); the
// broker tests run a three-node cluster of their own (testkit.KafkaCluster).
//
// The package has no code besides this comment: everything is in its tests.
package faults
