// Package sdk_test drives the Python and TypeScript SDKs' own test suites against a live
// service: real Redis and PostgreSQL, an API replica and the audit pipeline, started once here.
package sdk_test

import (
	"testing"

	"github.com/acv/acv/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
