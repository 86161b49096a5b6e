package faults_test

import (
	"os"
	"strings"
	"testing"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// The fault tests share the binary's PostgreSQL server (a database each, or a server of their
// own where they stop it) and its one-node Kafka; testkit.Main stops them all.
func TestMain(m *testing.M) { testkit.Main(m) }

// kafkaVersions are the releases the fault tests run against: the newest line only, unless
// ACV_KAFKA_VERSIONS names releases.
func kafkaVersions() []string {
	if strings.TrimSpace(os.Getenv(testkit.KafkaVersionsEnv)) != "" {
		return testkit.KafkaVersions()
	}
	return []string{localenv.Kafka4}
}

// eachKafka runs fn as a parallel subtest per Kafka release, and the test itself in parallel
// with the package's other tests: each test has servers (or at least topics, groups and
// databases) of its own.
func eachKafka(t *testing.T, fn func(t *testing.T, version string)) {
	if testing.Short() {
		t.Skip("fault tests with real processes and real Kafka")
	}
	t.Parallel()
	for _, v := range kafkaVersions() {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			fn(t, v)
		})
	}
}

// report logs a figure line of a fault test and keeps it for `make test`'s summary.
func report(t testing.TB, format string, args ...any) {
	t.Helper()
	testkit.Report(t, "faults: "+format, args...)
}
