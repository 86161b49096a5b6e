package faults_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// sessionTimeout is the log writers' Kafka session timeout in these tests
// (ACV_KAFKA_SESSION_TIMEOUT): a killed writer's partitions move to the others after it, not
// after kafka-go's 30 s. 6 s is the smallest a broker accepts by default.
const sessionTimeout = 6 * time.Second

// deployment is one test's acv: a testkit.Stack holding the servers and the operator's
// connections (project, key and codes set up as the acv commands do; PostgreSQL and Redis read
// as a DBA would), and `acv serve` processes the test starts, kills and restarts.
type deployment struct {
	t *testing.T
	s *testkit.Stack
	// kafka is the cluster the pipeline runs on.
	kafka *localenv.Kafka
	// settings are what every process runs with, before its roles and name.
	settings map[string]string

	projectID     string
	keyID, secret string
	// codes are the project's code values, all unused, in the order the load verifies them;
	// codeIDs maps each to its id.
	codes   []string
	codeIDs map[string]string
	http    *http.Client
	// retries counts the attempts the clients sent again.
	retries atomic.Int64
}

// newDeployment sets up servers and data for a test: Redis, the database at pgURL (empty: a
// fresh one on the shared server), a topic and consumer group of the test's own on k, a
// project with an unlimited API key, and n unused codes held by PostgreSQL and Redis as
// `acv codes import` leaves them.
func newDeployment(t *testing.T, k *localenv.Kafka, pgURL string, n int) *deployment {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	s := testkit.NewStackWith(t, testkit.StackOptions{PostgresURL: pgURL, Kafka: k})
	settings := s.ProcessSettings(t)
	settings["ACV_KAFKA_SESSION_TIMEOUT"] = sessionTimeout.String()
	p, err := s.Admin.CreateProject(ctx, contract.NewProject{Name: "faults"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := s.Admin.CreateAPIKey(ctx, p.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &deployment{
		t: t, s: s, kafka: k, projectID: p.ID, keyID: key.ID, secret: key.Secret,
		codeIDs:  make(map[string]string, n),
		settings: settings,
		http: &http.Client{
			Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512},
			Timeout:   10 * time.Second,
		},
	}
	t.Cleanup(d.http.CloseIdleConnections)
	d.importCodes(n)
	t.Logf("Redis, PostgreSQL, topic %s and %d codes ready in %s", s.Config.KafkaTopic, n, time.Since(start).Round(time.Millisecond))
	return d
}

// importCodes adds n unused codes, in PostgreSQL and then in Redis.
func (d *deployment) importCodes(n int) {
	d.t.Helper()
	ctx := context.Background()
	const chunk = 5000
	for from := 0; from < n; from += chunk {
		batch := make([]contract.NewCode, min(chunk, n-from))
		for i := range batch {
			batch[i] = contract.NewCode{Code: fmt.Sprintf("FLT-%07d", from+i)}
		}
		rows, err := d.s.Deps.Store.InsertCodes(ctx, d.projectID, batch)
		if err != nil {
			d.t.Fatal(err)
		}
		if err := d.s.Deps.Cache.PutCodes(ctx, d.projectID, rows); err != nil {
			d.t.Fatal(err)
		}
		for _, r := range rows {
			d.codes = append(d.codes, r.Code)
			d.codeIDs[r.Code] = r.ID
		}
	}
}

// start runs an `acv serve` process named name with the given roles (ACV_ROLES) and extra
// settings (name=value).
func (d *deployment) start(name, roles string, extra ...string) *testkit.Service {
	d.t.Helper()
	set := map[string]string{"ACV_ROLES": roles}
	for k, v := range d.settings {
		set[k] = v
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	return testkit.StartService(d.t, name, set)
}

// clients are signing clients of the project, one per API process.
func (d *deployment) clients(apis ...*testkit.Service) []*client.Client {
	out := make([]*client.Client, len(apis))
	for i, a := range apis {
		// As a checkout system calls: a verify that got no answer, or a 503, is sent again under
		// the call's Idempotency-Key (a replayed outcome when the first attempt ran).
		out[i] = &client.Client{BaseURL: "http://" + a.HTTPAddr, KeyID: d.keyID, Secret: d.secret, HTTP: d.http,
			Retries: 2, RetryBackoff: 100 * time.Millisecond,
			OnRetry: func(string, string, int, error) { d.retries.Add(1) }}
	}
	return out
}

// topic and group are the pipeline's Kafka topic and consumer group.
func (d *deployment) topic() string { return d.s.Config.KafkaTopic }
func (d *deployment) group() string { return d.s.Config.ConsumerGroup }

// brokers are the Kafka bootstrap addresses.
func (d *deployment) brokers() []string { return d.s.Config.KafkaBrokers }
