// Package testkit is the one harness of the end-to-end tests: the real servers one test binary
// shares (PostgreSQL, redis-server, an in-process Kafka-protocol broker), a whole deployment
// whose parts run through service.Run exactly as `acv serve` runs them, and requests built and
// signed by hand from the contract's text.
//
// It imports "testing", so only tests import it: the servers of cmd/acv come from localenv,
// which does not. Keeping every helper here, once, is what lets the suites of
// internal/service and deploy drive the same stack the same way.
package testkit
