// Package localenv starts the real servers the service depends on — redis-server (one, or a
// Redis Cluster of several masters and replicas), PostgreSQL and Apache Kafka in KRaft mode (its
// jars fetched once from Maven Central into a cache) — on free loopback ports in a directory
// of the caller's, for the test suite and for `make run`. Nothing here is a mock: the
// processes are the same binaries a deployment runs, and the fault tests kill them with
// SIGKILL. The in-process Kafka-protocol broker of the unit tests is in the localkafka
// subpackage, so the acv binary does not link it.
package localenv
