package testkit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/localenv/localkafka"
	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/store"
)

// Stack is a whole deployment on real servers, with API replicas, relays and consumers started
// by the test. Its own connections (Deps, Admin) are the operator's.
type Stack struct {
	T *testing.T
	// Config is what every part started afterwards runs with; a test may change it first.
	Config service.Config
	Deps   *service.Deps
	Admin  *admin.Admin
	Kafka  *localkafka.Broker // the in-process broker; nil on a real one (StackOptions.Kafka)
	// Redis or RedisCluster is the Redis the stack runs on; the other is nil.
	Redis        *localenv.Redis
	RedisCluster *localenv.RedisCluster
	// HTTP is every client's, checking each response against api/openapi.yaml (OpenAPICheck).
	HTTP *http.Client
	// Logs holds every log line of the parts; it fails the test on a line carrying a secret.
	Logs *LogSink
}

// ErrInjected is what the tests' fault hooks return, so a test can tell its own crash from a
// real failure.
var ErrInjected = errors.New("injected fault")

// NewStack starts the servers, migrates the database and opens the operator's connections;
// the test starts the parts (StartAPI, StartRelay, ...). Everything stops when the test ends.
func NewStack(t *testing.T) *Stack {
	t.Helper()
	return NewStackOn(t, PostgresDB(t))
}

// NewStackOn is NewStack on the database at pgURL, for a test that stops and starts a
// PostgreSQL server of its own (StartOwnPostgres).
func NewStackOn(t *testing.T, pgURL string) *Stack {
	t.Helper()
	return NewStackWith(t, StackOptions{PostgresURL: pgURL})
}

// StackOptions choose the servers a Stack runs on.
type StackOptions struct {
	// PostgresURL is the database to run on; empty creates a fresh one (PostgresDB).
	PostgresURL string
	// Kafka is a real Apache Kafka to run the pipeline on, with a topic and a consumer group
	// of the stack's own; nil starts an in-process broker for the stack.
	Kafka *localenv.Kafka
	// RedisCluster runs the stack on the shared 3-master Redis Cluster (as UseRedisCluster does).
	RedisCluster bool
	// OwnRedisCluster is a cluster of the caller's own to run on; it takes precedence.
	OwnRedisCluster *localenv.RedisCluster
}

// NewStackWith is NewStack on the servers o chooses.
func NewStackWith(t *testing.T, o StackOptions) *Stack {
	t.Helper()
	pgURL := o.PostgresURL
	if pgURL == "" {
		pgURL = PostgresDB(t)
	}
	ctx := context.Background()
	r, rc, redisURL := stackRedis(t, o)
	if err := store.Migrate(ctx, pgURL); err != nil {
		t.Fatal(err)
	}
	logs, logger := NewLogSink(t)
	cfg := service.Config{
		RedisURL: redisURL, DatabaseURL: pgURL, Instance: "test",
		KeyCacheTTL: 200 * time.Millisecond, RequestTimeout: 10 * time.Second, Drain: 5 * time.Second,
		RedisPoolSize: 128, RedisCoalesce: 4, Logger: logger, MasterKeys: MasterKeys(t, "test"),
	}
	k := stackKafka(t, o.Kafka, &cfg)
	d, err := service.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}
	t.Cleanup(tr.CloseIdleConnections)
	return &Stack{T: t, Config: cfg, Deps: d, Admin: &admin.Admin{Store: d.Store, Cache: d.Cache, Keys: cfg.MasterKeys}, Kafka: k, Redis: r, RedisCluster: rc,
		HTTP: &http.Client{Transport: NewOpenAPICheck(t, tr), Timeout: 30 * time.Second}, Logs: logs}
}

// Part is a running service.Run, one process of the deployment, that a test may stop early.
type Part struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Stop ends the part as SIGTERM ends `acv serve` (drain, flush, close) and returns what
// service.Run returned; later calls return the same.
func (p *Part) Stop() error {
	p.once.Do(func() {
		p.cancel()
		p.err = <-p.done
	})
	return p.err
}

// Run runs service.Run with cfg (ln for the API role) until the test ends or Stop, which
// returns its error: a fault hook may make it fail on purpose.
func (s *Stack) Run(cfg service.Config, ln net.Listener) *Part {
	return s.Go(func(ctx context.Context) error { return service.Run(ctx, cfg, ln) })
}

// Go runs run (e.g. service.RunWithHooks) as a part: until the test ends or Stop, which cancels
// run's context.
func (s *Stack) Go(run func(context.Context) error) *Part {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Part{cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- run(ctx) }()
	s.T.Cleanup(func() { _ = p.Stop() })
	return p
}

// RunClean is Run for a part that must end cleanly: when the test ends, the test fails naming
// what if service.Run returned an error.
func (s *Stack) RunClean(what string, cfg service.Config, ln net.Listener) *Part {
	p := s.Run(cfg, ln)
	s.T.Cleanup(func() {
		if err := p.Stop(); err != nil {
			s.T.Errorf("%s: %v", what, err)
		}
	})
	return p
}

func (s *Stack) listen() net.Listener {
	s.T.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.T.Fatal(err)
	}
	return ln
}

// startAPI starts an API replica with configure's changes, stopped (and drained) when the test
// ends; it returns its base URL.
func (s *Stack) startAPI(what string, configure func(*service.Config)) string {
	s.T.Helper()
	ln := s.listen()
	cfg := s.Config
	cfg.Roles = service.Roles{API: true}
	configure(&cfg)
	s.RunClean(what, cfg, ln)
	return "http://" + ln.Addr().String()
}

// StartAPI starts one more API replica, with its own connections on its own port, and
// returns its base URL.
func (s *Stack) StartAPI() string {
	s.T.Helper()
	return s.startAPI("api replica", func(*service.Config) {})
}

// StartAPIWithDebug starts an API replica with a debug listener (ACV_DEBUG_ADDR), as the
// compose stack runs every replica, and returns both base URLs.
func (s *Stack) StartAPIWithDebug() (base, debug string) {
	s.T.Helper()
	debug = freeAddr(s.T)
	return s.startAPI("api replica", func(c *service.Config) { c.DebugAddr = debug }), "http://" + debug
}

// StartAPIWithConsole starts an API replica serving the operator console (ACV_ADMIN_ADDR) on
// a listener of its own, as `acv serve` does by default. It returns both base URLs.
func (s *Stack) StartAPIWithConsole() (base, console string) {
	s.T.Helper()
	adminLn := s.listen()
	base = s.startAPI("api with console", func(c *service.Config) { c.AdminListener = adminLn })
	return base, "http://" + adminLn.Addr().String()
}

// StartAPIs starts n API replicas and returns their base URLs.
func (s *Stack) StartAPIs(n int) []string {
	s.T.Helper()
	bases := make([]string, n)
	for i := range bases {
		bases[i] = s.StartAPI()
	}
	return bases
}

// RelayConfig is the configuration of a relay process named name (its Redis consumer name).
func (s *Stack) RelayConfig(name string) service.Config {
	cfg := s.Config
	cfg.Roles, cfg.Instance = service.Roles{Relay: true}, name
	return cfg
}

// StartRelay runs a relay process named name (its Redis consumer name).
func (s *Stack) StartRelay(name string) *Part {
	return s.Run(s.RelayConfig(name), nil)
}

// ConsumerConfig is the configuration of one log writer of the test's consumer group.
func (s *Stack) ConsumerConfig() service.Config {
	cfg := s.Config
	cfg.Roles = service.Roles{Consumer: true}
	return cfg
}

// StartConsumer runs one log writer of the test's consumer group.
func (s *Stack) StartConsumer() *Part {
	return s.Run(s.ConsumerConfig(), nil)
}

// StartPipeline runs a relay under each name and one consumer, without faults.
func (s *Stack) StartPipeline(relays ...string) {
	s.T.Helper()
	for _, name := range relays {
		s.StartRelay(name)
	}
	s.StartConsumer()
}

// StartWorker runs relay and consumer as the compose stack's worker does, with a debug
// listener, and returns the debug listener's base URL.
func (s *Stack) StartWorker(name string) string {
	s.T.Helper()
	cfg := s.Config
	cfg.Instance = name
	cfg.Roles = service.Roles{Relay: true, Consumer: true}
	cfg.DebugAddr = freeAddr(s.T)
	s.RunClean("pipeline worker", cfg, nil)
	return "http://" + cfg.DebugAddr
}

// Tenant is a project with an API key and a client per API replica.
type Tenant struct {
	ProjectID string
	Key       contract.APIKey
	Clients   []*client.Client
}

// NewTenant creates a project (expiring at exp, nil for never), an unlimited key and a client
// for each base URL.
func (s *Stack) NewTenant(exp *int64, bases ...string) *Tenant {
	s.T.Helper()
	ctx := context.Background()
	p, err := s.Admin.CreateProject(ctx, contract.NewProject{Name: "test", ExpiresAt: exp})
	if err != nil {
		s.T.Fatal(err)
	}
	k, err := s.Admin.CreateAPIKey(ctx, p.ID, 0, 0)
	if err != nil {
		s.T.Fatal(err)
	}
	tn := &Tenant{ProjectID: p.ID, Key: k}
	for _, b := range bases {
		tn.Clients = append(tn.Clients, s.Client(b, k.ID, k.Secret))
	}
	return tn
}

// Client is a signing client of base with the key (id and secret, which may be wrong on
// purpose), on the stack's HTTP client, sending X-Nonce as current SDKs do.
func (s *Stack) Client(base, keyID, secret string) *client.Client {
	return &client.Client{BaseURL: base, KeyID: keyID, Secret: secret, HTTP: s.HTTP}
}

// ImportCodes creates codes with the given values (and optional expiry) as `acv codes import`
// does: rows in PostgreSQL, then their state in Redis.
func (s *Stack) ImportCodes(projectID string, exp *int64, values ...string) {
	s.T.Helper()
	codes := make([]contract.NewCode, len(values))
	for i, v := range values {
		codes[i] = contract.NewCode{Code: v, ExpiresAt: exp}
	}
	rows, err := s.Deps.Store.InsertCodes(context.Background(), projectID, codes)
	if err != nil {
		s.T.Fatal(err)
	}
	if err := s.Deps.Cache.PutCodes(context.Background(), projectID, rows); err != nil {
		s.T.Fatal(err)
	}
}

// MasterKeys is a keyring of fresh random master keys with the given ids, the first active, as
// ACV_MASTER_KEY would configure it.
func MasterKeys(t testing.TB, ids ...string) *secrets.Keyring {
	t.Helper()
	keys := make([]secrets.MasterKey, len(ids))
	for i, id := range ids {
		k, err := secrets.GenerateKey(id)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	r, err := secrets.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// NewAdmin is the operator's Admin wired as in production on a fresh migrated database and a
// Redis of the test's own, all closed at the end.
func NewAdmin(tb testing.TB) (a *admin.Admin, pgURL string, rdb *redis.Client) {
	tb.Helper()
	pgURL = PostgresDB(tb)
	st := MigratedStore(tb, pgURL)
	r := RedisServer(tb, localenv.RedisOptions{})
	rdb = redis.NewClient(&redis.Options{Addr: r.Addr})
	tb.Cleanup(func() { rdb.Close() })
	return &admin.Admin{Store: st, Cache: cache.New(rdb, cache.WithLoader(st)), Keys: MasterKeys(tb, "test")}, pgURL, rdb
}
