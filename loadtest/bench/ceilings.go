package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// redisCeiling runs redis-benchmark with acv's own verify script (cache/scripts/apply.lua)
// against preloaded code states: the most verifies Redis can decide on this machine.
func (b *bench) redisCeiling(ctx context.Context) error {
	// The ceiling works in database 1, emptied afterwards, and waits for Redis to rewrite its
	// append-only file, so its million keys cost the phases after it nothing.
	rdb := redis.NewClient(&redis.Options{Addr: b.redis.Addr, DB: 1})
	defer rdb.Close()
	defer settleRedis(ctx, rdb)
	// Keys as the cache lays them out: the project id as 16 raw bytes. redis-benchmark takes
	// them as arguments, which cannot hold a NUL byte, so draw an id without one.
	pid := contract.NewID()
	for {
		b, _ := hex.DecodeString(pid)
		if !bytes.Contains(b, []byte{0}) {
			break
		}
		pid = contract.NewID()
	}
	c := cache.New(rdb)
	if err := c.PublishProject(ctx, contract.Project{ID: pid, Status: true}, 0); err != nil {
		return err
	}
	const keyspace = 1_000_000
	for start := 0; start < keyspace; start += 10_000 {
		recs := make([]contract.CodeRecord, 0, 10_000)
		for i := start; i < start+10_000; i++ {
			recs = append(recs, contract.CodeRecord{ID: contract.NewID(), Code: fmt.Sprintf("%012d", i)})
		}
		if err := putPatternCodes(ctx, rdb, pid, "__rand_int__", recs); err != nil {
			return err
		}
	}
	// redis-benchmark's __rand_int__ is twelve digits, the values written above.
	call, err := verifyCall(ctx, rdb, pid, "__rand_int__", time.Unix(1_800_000_000, 0))
	if err != nil {
		return err
	}
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return err
	}
	n := 300_000
	args := []string{"-h", "127.0.0.1", "-p", strings.TrimPrefix(b.redis.Addr, "127.0.0.1:"), "--dbnum", "1", "-c", strconv.Itoa(b.conc),
		"-n", strconv.Itoa(n), "-r", strconv.Itoa(keyspace), "--csv"}
	args = append(args, call...)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-benchmark: %w: %s", err, out)
	}
	rps, err := benchmarkRPS(out)
	if err != nil {
		return err
	}
	b.rows = append(b.rows, row{name: "Redis ceiling: redis-benchmark, acv's verify script (AOF everysec)", rps: rps, isCeiling: true,
		note: fmt.Sprintf("%d calls, %d connections", n, b.conc)})
	return nil
}

// settleRedis empties the ceiling's database and waits for the append-only file rewrite that
// follows, so no background rewrite runs during a later phase.
func settleRedis(ctx context.Context, rdb *redis.Client) {
	_ = rdb.FlushDB(ctx).Err()
	_ = rdb.BgRewriteAOF(ctx).Err()
	for i := 0; i < 600; i++ {
		info, err := rdb.Info(ctx, "persistence").Result()
		if err != nil || (!strings.Contains(info, "aof_rewrite_in_progress:1") && !strings.Contains(info, "aof_rewrite_scheduled:1")) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// benchmarkRPS reads the requests per second from redis-benchmark's CSV output. The first
// field of a result line is the command as redis-benchmark prints it, unescaped: acv's script
// arguments hold raw bytes (ids, and text lengths such as 10, a newline), so a quote or a line
// break there breaks any CSV reading of the line. The figures are the line's last seven
// fields (rps, then the average, min, p50, p95, p99 and max latency; redis-benchmark before
// 7.0 printed rps alone), read from its end.
func benchmarkRPS(out []byte) (float64, error) {
	m := csvTail.FindSubmatch(bytes.TrimSpace(out))
	if m == nil {
		return 0, fmt.Errorf("unexpected redis-benchmark output: %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

var csvTail = regexp.MustCompile(`"([0-9.]+)"(?:(?:,"[0-9.]+"){6})?$`)

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+)`)
var latLine = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
var txLine = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)

// pgbench measures what a user would build instead: one transaction per verify, a conditional
// UPDATE of the code and an INSERT of its log, on the same PostgreSQL, durable settings.
func (b *bench) pgbench(ctx context.Context) error {
	if err := b.pg.CreateDatabase(ctx, "pgbench"); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, b.pg.URL("pgbench"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`DROP TABLE IF EXISTS bench_codes, bench_logs`,
		`CREATE TABLE bench_codes (id bigint PRIMARY KEY, project_id bigint NOT NULL, code text NOT NULL,
			verified_at timestamptz, verified_by text, UNIQUE (project_id, code))`,
		`CREATE TABLE bench_logs (id bigserial PRIMARY KEY, code_id bigint NOT NULL, result text NOT NULL,
			verified_by text, ip text, verified_at timestamptz NOT NULL)`,
		`INSERT INTO bench_codes (id, project_id, code) SELECT g, 1, 'C' || g FROM generate_series(1, 1000000) g`,
		`VACUUM ANALYZE bench_codes`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("prepare pgbench tables: %w", err)
		}
	}
	script := filepath.Join(b.dir, "verify.sql")
	if err := os.WriteFile(script, []byte(`\set id random(1, 1000000)
BEGIN;
UPDATE bench_codes SET verified_at = now(), verified_by = 'bench' WHERE id = :id AND verified_at IS NULL;
INSERT INTO bench_logs (code_id, result, verified_by, ip, verified_at) VALUES (:id, 'success', 'bench', '127.0.0.1', now());
END;
`), 0o644); err != nil {
		return err
	}
	// CPU per transaction: pgbench's own (its rusage once it exited: it forks nothing) and the
	// whole PostgreSQL server's over the same window, the backends pgbench opened included.
	pg0, busy0 := pgServerCPU(b.pg.Pid()), machineBusy()
	cmd := exec.CommandContext(ctx, filepath.Join(localenv.PGBin, "pgbench"), "-n", "-M", "prepared",
		"-h", "127.0.0.1", "-p", strconv.Itoa(b.pg.Port), "-U", "postgres",
		"-c", strconv.Itoa(b.conc), "-j", "2", "-T", strconv.Itoa(int(b.dur.Seconds())), "-f", script, "pgbench")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgbench: %w: %s", err, out)
	}
	time.Sleep(200 * time.Millisecond) // the postmaster reaps the ended backends, adding their CPU to its children's
	pgCPU, busy := pgServerCPU(b.pg.Pid())-pg0, machineBusy()-busy0
	genCPU := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("no tps in pgbench output: %s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	var avg float64
	if l := latLine.FindSubmatch(out); l != nil {
		avg, _ = strconv.ParseFloat(string(l[1]), 64)
	}
	var txs int64
	if m := txLine.FindSubmatch(out); m != nil {
		txs, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	b.costs = append(b.costs, costRow{name: costPlainPG, verifies: txs, rps: tps,
		cpu: cpuSample{partPostgres: pgCPU, partLoadgen: genCPU}, machine: busy,
		note: fmt.Sprintf("pgbench in the load generator column; mean latency %.2f ms", avg)})
	b.rows = append(b.rows, row{name: "Plain PostgreSQL verify: pgbench, UPDATE + log INSERT per transaction", rps: tps,
		note: fmt.Sprintf("%d clients, average latency %.2f ms", b.conc, avg), isCeiling: true})
	return nil
}
