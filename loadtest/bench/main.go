// Command bench measures acv against ceilings taken in the same run on the same machine (a
// bare Gin handler, redis-benchmark running acv's verify script, a plain PostgreSQL verify with
// pgbench) and prints the ratios, which hold across runs and machines where absolute figures
// drift; a second table gives each process's CPU per verify, the capacity model's input.
//
//	go run ./loadtest/bench -acv bin/acv
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/loadtest/loadgen"
	"github.com/acv/acv/store"
)

func main() {
	ceiling := flag.String("ceiling-server", "", "internal: serve the bare HTTP ceiling on this address")
	acvBin := flag.String("acv", "bin/acv", "the acv binary to measure")
	dur := flag.Duration("d", 10*time.Second, "length of each measured phase")
	conc := flag.Int("c", 64, "connections of the load generator")
	codes := flag.Int("codes", 800_000, "codes generated for the run")
	scaleN := flag.Int("scale", 10_000_000, "codes in the big project of the scale phase (-only scale)")
	profile := flag.String("profile", "", "write CPU profiles of the API (hot path and sustained phases), the relay and the consumer (sustained) into this directory")
	only := flag.String("only", "", "comma-separated phases to run (http, redis, rediscpu, factors, pg, hot, cluster, sustained, scale); all but factors and scale when empty")
	flag.Parse()
	if *ceiling != "" {
		if err := serveCeiling(*ceiling); err != nil {
			fmt.Fprintln(os.Stderr, "ceiling server:", err)
			os.Exit(1)
		}
		return
	}
	b := &bench{acv: *acvBin, dur: *dur, conc: *conc, codes: *codes, scaleN: *scaleN, profileDir: *profile}
	if *only != "" {
		b.phases = map[string]bool{}
		for _, p := range strings.Split(*only, ",") {
			b.phases[strings.TrimSpace(p)] = true
		}
	}
	b.loadAvg[0] = loadAvg()
	err := b.run(context.Background())
	b.loadAvg[1] = loadAvg()
	b.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Print(b.table())
}

// bench holds the servers of one run and what each phase measured.
type bench struct {
	acv        string
	phases     map[string]bool // nil: all
	dur        time.Duration
	conc       int
	codes      int
	scaleN     int
	profileDir string

	dir        string
	relayDebug string // the running relay's debug address, once it runs
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
	masters             []masterShare
	storage             storageFigures
	backlog, sustWin    pipeWindow // the pipeline draining the earlier phases' events; the kept sustained attempt
	loadAvg             [2]string  // at the start and the end of the run
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
// phase runs the pipeline, a one-node Kafka (started while the codes are generated), and
// prepares a project, a key and the codes.
func (b *bench) start(ctx context.Context) (err error) {
	if b.dir, err = os.MkdirTemp("", "acv-bench-"); err != nil {
		return err
	}
	dir := b.dir
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
	var kafkaUp errgroup.Group
	if b.runs("sustained") || b.runs("scale") {
		kafkaUp.Go(func() error { return b.startKafka(ctx) })
	}
	defer func() { err = errors.Join(err, kafkaUp.Wait()) }()
	// The acv processes read the master key from a key file.
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
	a, p, k, err := b.newProject(ctx, "bench")
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

func (b *bench) newProject(ctx context.Context, name string) (*admin.Admin, contract.Project, contract.APIKey, error) {
	a := &admin.Admin{Store: b.deps.Store, Cache: b.deps.Cache, Keys: b.cfg.MasterKeys}
	p, err := a.CreateProject(ctx, contract.NewProject{Name: name})
	if err != nil {
		return a, p, contract.APIKey{}, err
	}
	k, err := a.CreateAPIKey(ctx, p.ID, 0, 0)
	return a, p, k, err
}

func (b *bench) runs(key string) bool {
	if b.phases == nil {
		return key != "scale" && key != "factors"
	}
	return b.phases[key]
}

func (b *bench) take(n int) []string {
	n = min(n, len(b.pool))
	out := b.pool[:n]
	b.pool = b.pool[n:]
	return out
}

// load runs the load generator against base with the unused codes; those it verified are used up.
func (b *bench) load(ctx context.Context, base string, rate float64) loadgen.Report {
	rep := b.loadCodes(ctx, base, rate, b.pool)
	b.pool = b.pool[rep.Used:]
	return rep
}

func (b *bench) loadCodes(ctx context.Context, base string, rate float64, codes []string) loadgen.Report {
	return loadgen.Run(ctx, loadgen.Config{BaseURL: base, KeyID: b.keyID, Secret: b.secret, ProjectID: b.projectID,
		Codes: codes, Concurrency: b.conc, Duration: b.dur, Rate: rate})
}

func loadRow(name string, rep loadgen.Report, note string) row {
	return row{name: name, rps: rep.RPS, p50: rep.P50Ms, p99: rep.P99Ms, errors: rep.Errors,
		genCPU: rep.CPUSeconds / (rep.Seconds * float64(runtime.NumCPU())), note: note}
}

// machineShare is sec CPU seconds over rep's run as a percentage of the machine.
func machineShare(sec float64, rep loadgen.Report) float64 {
	return 100 * sec / (rep.Seconds * float64(runtime.NumCPU()))
}

func dash(format string, v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func ratio(v, of float64) string {
	if of == 0 {
		return "–"
	}
	return dash("%.2f", v/of)
}

// table renders the run as markdown, each row with its ratios to the ceilings of the same run.
func (b *bench) table() string {
	var ceil [3]float64 // HTTP, Redis, plain PostgreSQL
	for _, r := range b.rows {
		for i, prefix := range []string{"HTTP ceiling", "Redis ceiling", "Plain PostgreSQL"} {
			if strings.HasPrefix(r.name, prefix) {
				ceil[i] = r.rps
			}
		}
	}
	rows := append([]row(nil), b.rows...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].isCeiling && !rows[j].isCeiling })
	var sb strings.Builder
	fmt.Fprintf(&sb, "| measurement | req/s | p50 ms | p99 ms | errors | ÷ HTTP ceiling | ÷ Redis ceiling | ÷ plain PostgreSQL | load generator CPU | notes |\n")
	fmt.Fprintf(&sb, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", r.name, dash("%.0f", r.rps), dash("%.2f", r.p50), dash("%.2f", r.p99), r.errors,
			ratio(r.rps, ceil[0]), ratio(r.rps, ceil[1]), ratio(r.rps, ceil[2]), dash("%.0f%%", 100*r.genCPU), r.note)
	}
	fmt.Fprintf(&sb, "\nTargets (same run): hot path ≥ 0.45 × HTTP ceiling → %s; sustained ≥ 3 × plain PostgreSQL → %s; p99 ≤ 5 ms at half the max rate → %s ms (relay paused), %s ms (pipeline running), %s ms (pipeline running at nice %d).\n",
		ratio(b.hot.RPS, ceil[0]), ratio(b.sust.RPS, ceil[2]), dash("%.2f", b.halfHot.P99Ms), dash("%.2f", b.halfRate.P99Ms), dash("%.2f", b.halfRateNice.P99Ms), pipelineNice)
	fmt.Fprintf(&sb, "Machine: %d CPUs shared by the load generator, acv, Redis, PostgreSQL and the Kafka broker; load average (1, 5, 15 min) %s at the start, %s at the end.\n",
		runtime.NumCPU(), b.loadAvg[0], b.loadAvg[1])
	b.costTable(&sb)
	b.clusterTable(&sb)
	b.storageText(&sb)
	return sb.String()
}
