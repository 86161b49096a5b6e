// Package localenv starts the real servers the service depends on — redis-server, PostgreSQL
// and an in-process Kafka-protocol broker (kfake) — on free loopback ports in a directory of
// the caller's, for the test suite and for `make run`. Nothing here is a mock: the processes
// are the same binaries a deployment runs.
package localenv
