package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/loadtest/loadgen"
)

// serveCeiling is the HTTP ceiling: a bare Gin handler on the verify route that parses the
// body and answers a result, with no authentication and no store.
func serveCeiling(addr string) error {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.POST("/api/v1/projects/:project_id/codes/verify", func(c *gin.Context) {
		body, err := io.ReadAll(io.LimitReader(c.Request.Body, contract.MaxBodyBytes+1))
		var req contract.VerifyRequest
		if err != nil || json.Unmarshal(body, &req) != nil {
			c.AbortWithStatus(http.StatusBadRequest)
			return
		}
		id := "01a20000000000000000000000000000"
		at := int64(1_800_000_000)
		c.JSON(http.StatusOK, contract.VerifyResponse{Success: true, CodeID: &id, Code: req.Code, VerifiedAt: &at, Message: "Code verified successfully"})
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return http.Serve(ln, e)
}

func (b *bench) httpCeiling(ctx context.Context) error {
	addr, err := localenv.FreeAddr()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	p, err := localenv.Launch("ceiling", exec.Command(self, "-ceiling-server", addr), "")
	if err != nil {
		return err
	}
	defer p.Kill()
	if err := waitHTTP(ctx, "http://"+addr+"/api/v1/projects/x/codes/verify", http.MethodPost); err != nil {
		return err
	}
	// The ceiling changes no state, so it may reuse every code.
	var rep loadgen.Report
	cpu := meter{partAPI: func() float64 { return pidCPU(p.Pid()) }, partLoadgen: loadgen.CPUSeconds}.during(func() {
		rep = b.loadCodes(ctx, "http://"+addr, 0, b.pool)
	})
	b.costs = append(b.costs, newCostRow(costCeiling, rep, cpu, "the handler process in the API column; answers success:true without any store"))
	r := loadRow("HTTP ceiling: bare Gin handler, verify route shape", rep,
		fmt.Sprintf("same load generator, signing included; CPU of the machine: handler %.0f%%, all %.0f%%",
			machineShare(cpu[partAPI], rep), machineShare(cpu[partMachine], rep)))
	r.isCeiling = true
	b.rows = append(b.rows, r)
	return nil
}

// redisCeiling runs redis-benchmark with acv's own verify script against preloaded codes: the
// most verifies Redis can decide on this machine.
func (b *bench) redisCeiling(ctx context.Context) error {
	// Database 1, emptied afterwards, so its million keys cost the later phases nothing.
	rdb := redis.NewClient(&redis.Options{Addr: b.redis.Addr, DB: 1})
	defer rdb.Close()
	defer settleRedis(ctx, rdb)
	pid := nulFreeID() // keys hold the project id as 16 raw bytes
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
	n := 300_000
	args := []string{"-h", "127.0.0.1", "-p", strings.TrimPrefix(b.redis.Addr, "127.0.0.1:"), "--dbnum", "1", "-c", strconv.Itoa(b.conc),
		"-n", strconv.Itoa(n), "-r", strconv.Itoa(keyspace), "--csv"}
	args = append(args, call...)
	out, err := exec.CommandContext(ctx, "redis-benchmark", args...).CombinedOutput()
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

// settleRedis empties the ceiling's database and waits for the AOF rewrite that follows, so
// none runs during a later phase.
func settleRedis(ctx context.Context, rdb *redis.Client) {
	_ = rdb.FlushDB(ctx).Err()
	_ = rdb.BgRewriteAOF(ctx).Err()
	_ = localenv.Poll(ctx, time.Minute, 100*time.Millisecond, func() error {
		if p, err := info(ctx, rdb, "persistence"); err == nil && (p["aof_rewrite_in_progress"] == "1" || p["aof_rewrite_scheduled"] == "1") {
			return errors.New("AOF rewrite running")
		}
		return nil
	})
}

// benchmarkRPS reads the requests per second from redis-benchmark's CSV output, from the end
// of the line: its first field is the command unescaped, and acv's arguments hold raw bytes
// (quotes, line breaks). The rate is followed by six latencies, or alone before 7.0.
func benchmarkRPS(out []byte) (float64, error) {
	m := csvTail.FindSubmatch(bytes.TrimSpace(out))
	if m == nil {
		return 0, fmt.Errorf("unexpected redis-benchmark output: %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

var csvTail = regexp.MustCompile(`"([0-9.]+)"(?:(?:,"[0-9.]+"){6})?$`)

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
	// CPU: pgbench's own rusage (it forks nothing) and the whole PostgreSQL server's.
	m := meter{partPostgres: func() float64 { return pgServerCPU(b.pg.Pid()) }}
	cpu0 := m.sample()
	cmd := exec.CommandContext(ctx, filepath.Join(localenv.PGBin, "pgbench"), "-n", "-M", "prepared",
		"-h", "127.0.0.1", "-p", strconv.Itoa(b.pg.Port), "-U", "postgres",
		"-c", strconv.Itoa(b.conc), "-j", "2", "-T", strconv.Itoa(int(b.dur.Seconds())), "-f", script, "pgbench")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgbench: %w: %s", err, out)
	}
	time.Sleep(200 * time.Millisecond) // the postmaster reaps the ended backends, adding their CPU to its children's
	cpu := m.sample().since(cpu0)
	cpu[partLoadgen] = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	figure := func(re string) float64 {
		m := regexp.MustCompile(re + ` ([0-9.]+)`).FindSubmatch(out)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	tps, avg := figure(`tps =`), figure(`latency average =`)
	if tps == 0 {
		return fmt.Errorf("no tps in pgbench output: %s", out)
	}
	b.costs = append(b.costs, costRow{name: costPlainPG, verifies: int64(figure(`number of transactions actually processed:`)), rps: tps,
		cpu:  cpu,
		note: fmt.Sprintf("pgbench in the load generator column; mean latency %.2f ms", avg)})
	b.rows = append(b.rows, row{name: "Plain PostgreSQL verify: pgbench, UPDATE + log INSERT per transaction", rps: tps,
		note: fmt.Sprintf("%d clients, average latency %.2f ms", b.conc, avg), isCeiling: true})
	return nil
}

// The Redis ceiling sends the hot path's verify call itself (the replay marker's SET NX is
// not the script's). redis-benchmark substitutes "__rand_int__" after the keys are named, so
// every call lands in the value pattern's shard, where putPatternCodes stores the codes.

// patternCodeKey is a code's key in the value pattern's shard, as the cache lays keys out;
// putPatternCodes fails loudly when the layout changed under it (a renamed key is missing).
func patternCodeKey(projectID, valuePattern, value string) string {
	return cache.ShardPrefix(cache.ShardOf(projectID, valuePattern)) + "c:" + contract.RawID(projectID) + value
}

// verifyCall is redis-benchmark's command for one verify of a random code of valuePattern,
// with an event id and head free of NUL bytes.
func verifyCall(ctx context.Context, rdb *redis.Client, projectID, valuePattern string, now time.Time) ([]string, error) {
	if err := cache.New(rdb).Preload(ctx); err != nil {
		return nil, err
	}
	libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "acv_apply_*"}).Result()
	if err != nil {
		return nil, fmt.Errorf("list the verify function: %w", err)
	}
	if len(libs) != 1 || len(libs[0].Functions) != 1 {
		return nil, fmt.Errorf("want one acv_apply library on the bench's Redis, found %d", len(libs))
	}
	s := cache.ShardOf(projectID, valuePattern)
	keys := []string{
		patternCodeKey(projectID, valuePattern, valuePattern),
		cache.ShardPrefix(s) + "p:" + projectID,
		cache.OutboxOf(projectID, valuePattern),
	}
	head, err := contract.AppendEventHead(nil, contract.Operation{Action: contract.ActionVerify, ProjectID: projectID,
		EventID: nulFreeID(), By: "bench", IP: "127.0.0.1", Now: now})
	if err != nil {
		return nil, fmt.Errorf("verify call: %w", err)
	}
	if strings.Contains(string(head), "\x00") {
		return nil, fmt.Errorf("verify call: project id %s holds a NUL byte", projectID)
	}
	call := append([]string{"FCALL", libs[0].Functions[0].Name, fmt.Sprint(len(keys))}, keys...)
	return append(call, string(head)), nil
}

// nulFreeID is a new id whose raw bytes hold no NUL, which redis-benchmark's arguments cannot.
func nulFreeID() string {
	for {
		if id := contract.NewID(); !strings.Contains(contract.RawID(id), "\x00") {
			return id
		}
	}
}

// putPatternCodes stores codes (Cache.PutCodes) and renames each to its key in the value
// pattern's shard, where verifyCall's calls look for them.
func putPatternCodes(ctx context.Context, rdb *redis.Client, projectID, valuePattern string, codes []contract.CodeRecord) error {
	if err := cache.New(rdb).PutCodes(ctx, projectID, codes); err != nil {
		return err
	}
	pipe := rdb.Pipeline()
	for _, r := range codes {
		own := cache.ShardPrefix(cache.ShardOf(projectID, r.Code)) + "c:" + contract.RawID(projectID) + r.Code
		if to := patternCodeKey(projectID, valuePattern, r.Code); own != to {
			pipe.Rename(ctx, own, to)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("move codes to the pattern's shard: %w", err)
	}
	return nil
}
