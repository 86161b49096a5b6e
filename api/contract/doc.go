// Package contract holds the wire contract of the activation-code verification service: the
// resources clients see, the verify/reactivate outcomes and their error codes, the derivation
// of a code's state, identifiers and the request-signing scheme. It imports nothing of the
// project, so the Redis, Postgres, Kafka and HTTP packages all speak the same types.
package contract
