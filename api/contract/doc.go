// Package contract is the domain of the activation-code verification service: the wire
// contract (the resources clients see, the verify/reactivate outcomes and their error codes,
// the derivation of a code's state, identifiers and the request-signing scheme), every type
// the services and adapters exchange (batches, admin accounts and sessions, the admin audit
// log, verification log search, imports, keyset pages), and the error kinds with their one
// HTTP table (Kind.HTTPStatus, Answer). It imports nothing of the project, so the Redis,
// Postgres, Kafka and HTTP packages, the admin service and the console all speak the same
// types (api/layers_test.go checks the direction of every import).
package contract
