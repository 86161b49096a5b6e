// Package audit carries verification-log events from the Redis outbox to their durable home.
//
// The hot path (a Lua script in the cache package) appends one event per verify/reactivate to
// the outbox (a list) of its shard in the same atomic step that changes the code, so an answered
// request always has its log recorded. The Relay moves those entries to Kafka and removes them
// from the outbox only after Kafka acknowledged them; the Consumer applies Kafka messages to a
// Sink (Postgres) that is idempotent by event id, and commits offsets only after the Sink
// succeeded. Every hop is at-least-once; the Sink's dedup by event id makes the end result
// exactly one row per event.
package audit
