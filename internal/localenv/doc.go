// Package localenv starts the real servers the service depends on — redis-server (one, or a
// Redis Cluster), PostgreSQL and Apache Kafka in KRaft mode (jars fetched once from Maven
// Central) — on free loopback ports, for the test suite and for `make run`. They are the
// binaries a deployment runs, and the fault tests kill them. The in-process broker of the unit
// tests is in localkafka, so the acv binary does not link it.
package localenv
