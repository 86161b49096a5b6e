// Package audit carries verification-log events from the Redis outbox to their durable home.
//
// The hot path appends one event per verify/reactivate to its shard's outbox in the same atomic
// step that changes the code. The Relay moves the entries to Kafka (or, in the direct pipeline,
// straight to the Sink) and removes them only once acknowledged; the Consumer applies Kafka
// messages to the Sink (Postgres) and commits offsets only after it succeeded. Every hop is
// at-least-once; the Sink's dedup by event id leaves exactly one row per event.
package audit
