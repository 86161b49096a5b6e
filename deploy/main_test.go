// Package deploy_test checks the deployment's monitoring files (deploy/prometheus,
// deploy/grafana) against a live stack: the rules and dashboard must read series the service
// really exports, under the job names the deployment scrapes. It is a test-only package; the
// stack comes from internal/testkit.
package deploy_test

import (
	"testing"

	"github.com/acv/acv/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
