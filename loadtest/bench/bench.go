package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/loadtest/loadgen"
	"github.com/acv/acv/store"
)

// bench holds the servers of one run and what each phase measured.
type bench struct {
	acv    string
	phases map[string]bool // nil: all
	dur    time.Duration
	conc   int
	codes  int
	scaleN int
	// profileDir, when set, receives a CPU profile of the API over each measured phase that
	// profiles (profile.go), for the closing notes' "where the time goes".
	profileDir string

	dir string
	// relayDebug is the running relay's debug address (its /metrics), once it runs.
	relayDebug string
	redis      *localenv.Redis
	pg         *localenv.Postgres
	kafka      *localenv.Kafka
	cfg        service.Config
	deps       *service.Deps

	projectID, keyID, secret string
	pool                     []string // unused codes, handed out phase by phase

	rows                []row
	hot, sust, halfRate loadgen.Report
	halfHot             loadgen.Report
	halfRateNice        loadgen.Report // half rate, pipeline running at pipelineNice
	costs               []costRow
	idle                cpuSample // CPU seconds per part over idleWindow, pipeline running, no load
	clusterRep          loadgen.Report
	masters             []masterShare // the cluster phase's per-master distribution
	storage             storageFigures
	loadAvg             [2]string // the machine's load averages when the run started and ended
}

// row is one line of the table.
type row struct {
	name      string
	rps       float64
	p50, p99  float64 // ms; 0 = not measured
	errors    int64
	genCPU    float64 // load generator's share of the machine, 0..1
	note      string
	isCeiling bool
}

func (b *bench) cleanup() {
	if b.deps != nil {
		b.deps.Close()
	}
	if b.kafka != nil {
		b.kafka.Close()
	}
	if b.pg != nil {
		b.pg.Stop()
	}
	if b.redis != nil {
		b.redis.Stop(10 * time.Second)
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

func (b *bench) run(ctx context.Context) error {
	if err := b.start(ctx); err != nil {
		return err
	}
	steps := []struct {
		key, name string
		fn        func(context.Context) error
	}{
		{"http", "http ceiling", b.httpCeiling},
		{"redis", "redis ceiling", b.redisCeiling},
		{"rediscpu", "redis cpu per verify", b.redisCPU},
		{"factors", "what makes FCALL cost more", b.fcallFactors},
		{"hot", "acv hot path", b.hotPath},
		{"cluster", "acv hot path on a 3-master Redis Cluster", b.clusterHotPath},
		{"sustained", "acv sustained", b.sustained},
		// Last: pgbench leaves a million updated rows for autovacuum, which would take CPU from
		// any phase after it.
		{"pg", "plain postgres verify", b.pgbench},
		{"scale", "data scale", b.scale},
	}
	for _, s := range steps {
		if !b.runs(s.key) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s …\n", s.name)
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// start brings up Redis (AOF everysec, as in production), a durable PostgreSQL and, when a
// phase runs the pipeline, a real one-node Apache Kafka (started while the codes are
// generated), and prepares a project, a key and the codes.
func (b *bench) start(ctx context.Context) (err error) {
	dir, err := os.MkdirTemp("", "acv-bench-")
	if err != nil {
		return err
	}
	b.dir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	if b.redis, err = localenv.StartRedis(filepath.Join(dir, "redis"), localenv.RedisOptions{AOF: true}); err != nil {
		return err
	}
	if b.pg, err = localenv.StartPostgres(ctx, filepath.Join(dir, "pg"), localenv.PostgresOptions{}); err != nil {
		return err
	}
	if err := b.pg.CreateDatabase(ctx, "acv"); err != nil {
		return err
	}
	kafkaUp := make(chan error, 1)
	if b.runs("sustained") || b.runs("scale") {
		go func() { kafkaUp <- b.startKafka(ctx) }()
	} else {
		kafkaUp <- nil
	}
	defer func() {
		if kerr := <-kafkaUp; err == nil {
			err = kerr
		}
	}()
	// The master key the acv processes seal and open API-key secrets with, in a key file.
	mk, err := secrets.GenerateKey("bench")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "master.key"), []byte(mk.Line()+"\n"), 0o600); err != nil {
		return err
	}
	keys, err := secrets.New(mk)
	if err != nil {
		return err
	}
	b.cfg = service.Config{
		RedisURL: "redis://" + b.redis.Addr + "/0", DatabaseURL: b.pg.URL("acv"),
		KafkaTopic: audit.Topic, Partitions: kafkaPartitions, ConsumerGroup: "acv-log-writer", Instance: "bench",
		RedisPoolSize: 64, PGMaxConns: 16, MasterKeys: keys, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if err := store.Migrate(ctx, b.cfg.DatabaseURL); err != nil {
		return err
	}
	if b.deps, err = service.Open(ctx, b.cfg); err != nil {
		return err
	}
	a := &admin.Admin{Store: b.deps.Store, Cache: b.deps.Cache, Keys: keys}
	p, err := a.CreateProject(ctx, contract.NewProject{Name: "bench"})
	if err != nil {
		return err
	}
	k, err := a.CreateAPIKey(ctx, p.ID, 0, 0)
	if err != nil {
		return err
	}
	b.projectID, b.keyID, b.secret = p.ID, k.ID, k.Secret
	fmt.Fprintf(os.Stderr, "bench: generating %d codes …\n", b.codes)
	t0 := time.Now()
	if _, err := a.Generate(ctx, p.ID, contract.GenerateSpec{Count: b.codes, Length: 12}, nil); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: generated %d codes in %.1f s\n", b.codes, time.Since(t0).Seconds())
	return b.deps.Store.ExportCodes(ctx, p.ID, func(r contract.CodeRecord) error {
		b.pool = append(b.pool, r.Code)
		return nil
	})
}

// runs tells whether phase key is part of this run.
func (b *bench) runs(key string) bool {
	if b.phases == nil {
		return key != "scale" && key != "factors"
	}
	return b.phases[key]
}

// take hands out n unused codes.
func (b *bench) take(n int) []string {
	n = min(n, len(b.pool))
	out := b.pool[:n]
	b.pool = b.pool[n:]
	return out
}

// load runs the load generator against base with fresh codes.
func (b *bench) load(ctx context.Context, base string, rate float64, maxCodes int) loadgen.Report {
	codes := b.take(maxCodes)
	rep := loadgen.Run(ctx, loadgen.Config{BaseURL: base, KeyID: b.keyID, Secret: b.secret, ProjectID: b.projectID,
		Codes: codes, Concurrency: b.conc, Duration: b.dur, Rate: rate})
	// Codes the run did not reach go back to the pool.
	b.pool = append(b.pool, codes[rep.Used:]...)
	return rep
}

func genShare(rep loadgen.Report) float64 {
	return rep.CPUSeconds / (rep.Seconds * float64(runtime.NumCPU()))
}

func (b *bench) httpCeiling(ctx context.Context) error {
	port, err := localenv.FreePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-ceiling-server", addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := waitHTTP(ctx, "http://"+addr+"/api/v1/projects/x/codes/verify", http.MethodPost); err != nil {
		return err
	}
	// The ceiling changes no state, so it may reuse codes: put them back afterwards.
	codes := b.take(len(b.pool))
	m := meter{partAPI: func() float64 { return pidCPU(cmd.Process.Pid) }, partLoadgen: selfCPU}
	cpu0, busy0 := m.sample(), machineBusy()
	rep := loadgen.Run(ctx, loadgen.Config{BaseURL: "http://" + addr, KeyID: b.keyID, Secret: b.secret, ProjectID: b.projectID,
		Codes: codes, Concurrency: b.conc, Duration: b.dur})
	cpu, busy := m.sample().since(cpu0), machineBusy()-busy0
	b.pool = codes
	share := func(sec float64) float64 { return 100 * sec / (rep.Seconds * float64(numCPU())) }
	b.costs = append(b.costs, newCostRow(costCeiling, rep, cpu, busy, "the handler process in the API column; answers success:true without any store"))
	b.rows = append(b.rows, row{name: "HTTP ceiling: bare Gin handler, verify route shape", rps: rep.RPS, p50: rep.P50Ms, p99: rep.P99Ms,
		errors: rep.Errors, genCPU: genShare(rep), isCeiling: true,
		note: fmt.Sprintf("same load generator, signing included; CPU of the machine: handler %.0f%%, all %.0f%%",
			share(cpu[partAPI]), share(busy))})
	return nil
}

func waitHTTP(ctx context.Context, url, method string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answering: %w", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
