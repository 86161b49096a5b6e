// Package testkit is the one harness of the end-to-end tests: the real servers one test binary
// shares (PostgreSQL, redis-server, a 3-master Redis Cluster, Apache Kafka 3.x and 4.x, and the
// in-process Kafka-protocol broker for quick suites), a whole deployment whose parts run through
// service.Run exactly as `acv serve` runs them, requests built and signed by hand from the
// contract's text, and a check of every response against api/openapi.yaml.
//
// It imports "testing", so only tests import it: the servers of cmd/acv come from localenv,
// which does not. Keeping every helper here, once, is what lets the suites of
// internal/service, api and deploy drive the same stack the same way.
package testkit
