// Package localenv starts the real servers the service depends on — redis-server and
// PostgreSQL — on free loopback ports in a directory of the caller's, for the test suite and
// for `make run`. Nothing here is a mock: the processes are the same binaries a deployment
// runs. The in-process Kafka-protocol broker of the tests is in the localkafka subpackage, so
// the acv binary does not link it.
package localenv
