package service_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/store"
)

func TestMain(m *testing.M) { localenv.Main(m) }

// stack is a whole deployment on real servers: Redis, PostgreSQL, a kfake broker, and any
// number of API replicas, relays and consumers started by the test.
type stack struct {
	t     *testing.T
	cfg   service.Config
	deps  *service.Deps
	admin *admin.Admin
	kafka *localenv.Kafka
	redis *localenv.Redis
	http  *http.Client
	logs  *logSink
}

// newStack starts the servers; parts are started by the test with startAPI, startRelay and
// startConsumer.
func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	r := localenv.RedisServer(t, localenv.RedisOptions{AOF: true})
	pgURL := localenv.PostgresDB(t)
	if err := store.Migrate(ctx, pgURL); err != nil {
		t.Fatal(err)
	}
	k := localenv.KafkaBroker(t, audit.Topic, 4)
	logs, logger := newLogSink(t)
	cfg := service.Config{
		RedisURL: "redis://" + r.Addr + "/0", DatabaseURL: pgURL, KafkaBrokers: k.Brokers,
		KafkaTopic: audit.Topic, Partitions: 4, ConsumerGroup: "acv-test", Instance: "test",
		KeyCacheTTL: 200 * time.Millisecond, RequestTimeout: 10 * time.Second, Drain: 5 * time.Second,
		RedisPoolSize: 128, RedisCoalesce: 4, Logger: logger,
	}
	d := openDeps(t, cfg)
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}
	t.Cleanup(tr.CloseIdleConnections)
	return &stack{t: t, cfg: cfg, deps: d, admin: &admin.Admin{Store: d.Store, Cache: d.Cache}, kafka: k, redis: r,
		http: &http.Client{Transport: tr, Timeout: 30 * time.Second}, logs: logs}
}

func openDeps(t *testing.T, cfg service.Config) *service.Deps {
	t.Helper()
	d, err := service.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// startAPI starts one more API replica, a service.Run of the API role with its own
// connections on its own port, as `acv serve` runs it, and returns its base URL. It is
// stopped (and drained) when the test ends.
func (s *stack) startAPI() string {
	s.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	cfg := s.cfg
	cfg.Roles = service.Roles{API: true}
	p := s.run(cfg, ln)
	s.t.Cleanup(func() {
		if err := p.stop(); err != nil {
			s.t.Errorf("api replica: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// part is a running service.Run that a test may stop early.
type part struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func (p *part) stop() error {
	p.once.Do(func() {
		p.cancel()
		p.err = <-p.done
	})
	return p.err
}

// run starts service.Run with cfg (and ln for the API role) until the test ends or stop.
func (s *stack) run(cfg service.Config, ln net.Listener) *part {
	ctx, cancel := context.WithCancel(context.Background())
	p := &part{cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- service.Run(ctx, cfg, ln) }()
	s.t.Cleanup(func() { _ = p.stop() })
	return p
}

// startRelay runs a relay process named name; hooks inject faults.
func (s *stack) startRelay(name string, h service.Hooks) *part {
	s.t.Helper()
	cfg := s.cfg
	cfg.Roles, cfg.Instance, cfg.Hooks = service.Roles{Relay: true}, name, h
	return s.run(cfg, nil)
}

// startConsumer runs one log writer of the test's consumer group.
func (s *stack) startConsumer(h service.Hooks) *part {
	s.t.Helper()
	cfg := s.cfg
	cfg.Roles, cfg.Hooks = service.Roles{Consumer: true}, h
	return s.run(cfg, nil)
}

// tenant is a project with an API key and a client per API replica.
type tenant struct {
	ProjectID string
	Key       contract.APIKey
	Clients   []*client.Client
}

// newTenant creates a project (with expiry exp, nil for none) and an unlimited key, and a client
// for each base URL.
func (s *stack) newTenant(exp *int64, bases ...string) *tenant {
	s.t.Helper()
	ctx := context.Background()
	p, err := s.admin.CreateProject(ctx, store.NewProject{Name: "test", ExpiresAt: exp})
	if err != nil {
		s.t.Fatal(err)
	}
	k, err := s.deps.Store.CreateAPIKey(ctx, p.ID, 0, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	tn := &tenant{ProjectID: p.ID, Key: k}
	for _, b := range bases {
		tn.Clients = append(tn.Clients, &client.Client{BaseURL: b, KeyID: k.ID, Secret: k.Secret, HTTP: s.http, Nonce: true})
	}
	return tn
}

// importCodes creates codes with the given values (and optional expiry) through the admin path.
func (s *stack) importCodes(projectID string, exp *int64, values ...string) {
	s.t.Helper()
	codes := make([]store.NewCode, len(values))
	for i, v := range values {
		codes[i] = store.NewCode{Code: v, ExpiresAt: exp}
	}
	rows, err := s.deps.Store.InsertCodes(context.Background(), projectID, codes)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.deps.Cache.PutCodes(context.Background(), projectID, rows); err != nil {
		s.t.Fatal(err)
	}
}

// logCount counts the verification logs of a code in Postgres.
func (s *stack) logCount(codeID string) int {
	s.t.Helper()
	var n int
	if err := s.deps.Store.Pool().QueryRow(context.Background(),
		"SELECT count(*) FROM verification_logs WHERE code_id = $1", codeID).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", within, what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outboxEmpty reports whether every outbox stream is drained.
func (s *stack) outboxEmpty() (bool, string) {
	n, _, err := audit.OutboxLen(context.Background(), s.deps.Redis, cache.OutboxStreams())
	if err != nil {
		return false, err.Error()
	}
	return n == 0, fmt.Sprintf("%d entries in the outbox", n)
}

var errInjected = errors.New("injected fault")

var hooksNone = service.Hooks{}
