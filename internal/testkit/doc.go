// Package testkit is the one harness of the end-to-end tests: the real servers a test binary
// shares (PostgreSQL, redis-server, a Redis Cluster, Apache Kafka 3.x and 4.x, an in-process
// broker), a whole deployment run through service.Run as `acv serve` runs it, requests signed
// by hand from the contract's text, and a check of every response against api/openapi.yaml.
// It imports "testing", so only tests import it; cmd/acv gets its servers from localenv.
package testkit
