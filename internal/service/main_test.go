package service_test

import (
	"testing"

	"github.com/acv/acv/internal/testkit"
)

// The end-to-end suites of this package share one PostgreSQL server (a database each) and
// start their own Redis and Kafka per test; testkit.Main stops them all.
func TestMain(m *testing.M) { testkit.Main(m) }
