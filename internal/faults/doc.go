// Package faults holds the fault tests of the audit pipeline: `acv serve` children against a
// real Redis, PostgreSQL and Kafka under concurrent signed verifies, while the tests kill those
// processes, brokers or PostgreSQL. Each then asserts in PostgreSQL that every verify answered
// success=true (or lost but redeemed in Redis) has exactly one success row, no other code has
// one, and no outbox entry is left. The package has no code besides this comment.
package faults
