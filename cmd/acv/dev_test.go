package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/store"
)

// `make run` must not lose a log it acknowledged. The real binary runs `acv dev` (its own
// redis-server and PostgreSQL) as a child process under concurrent signed verifies; it is
// killed with SIGKILL mid-load, restarted on the same data directory, loaded again and stopped
// with SIGTERM, and restarted once more. After each restart, every verify that was answered
// success must have exactly one success row in verification_logs and its code a verified_at.
func TestDevKeepsEveryAcknowledgedLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds acv and runs acv dev three times")
	}
	started := time.Now()
	work, err := os.MkdirTemp("", "acv-devtest-")
	if err != nil {
		t.Fatal(err)
	}
	// The postgres user (the server runs as it when we are root) must reach its directory.
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(work, "data")
	h := &devHarness{t: t, work: work, data: data, bin: filepath.Join(work, "acv")}
	t.Cleanup(h.cleanup)

	build := exec.Command("go", "build", "-o", h.bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/acv: %v\n%s", err, out)
	}
	t.Logf("%s built acv", since(started))

	dev := h.start()
	var d demo
	b, err := os.ReadFile(filepath.Join(data, "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	// Codes enough for both probes, written to PostgreSQL as an import leaves them: Redis
	// loads each on its first verify.
	const perProbe = 40_000
	codes := addCodes(t, dev.pgURL, d.ProjectID, 2*perProbe)
	t.Logf("%s acv dev serving, %d codes added", since(started), len(codes))

	probes := []struct {
		name string
		sig  syscall.Signal
	}{
		{"kill -9", syscall.SIGKILL},
		{"SIGTERM", syscall.SIGTERM},
	}
	for i, p := range probes {
		acked, tried := h.loadUntilSignal(dev, d, codes[i*perProbe:(i+1)*perProbe], p.sig)
		t.Logf("%s %s sent under load, acv dev gone", since(started), p.name)
		dev = h.start()
		logged, lost, dups := h.waitLogged(dev, d.ProjectID, acked)
		t.Logf("%s restarted and drained; %s mid-load: %d verifies acknowledged success (of %d sent), %d logged once, %d duplicated, lost %d",
			since(started), p.name, len(acked), tried, logged, dups, lost)
		if lost != 0 || dups != 0 {
			t.Errorf("%s: %d acknowledged verifies lost their log, %d have more than one success row", p.name, lost, dups)
		}
	}
	if code := h.stop(dev, syscall.SIGTERM); code != 0 {
		t.Errorf("acv dev exited with %d after SIGTERM", code)
	}
	t.Logf("%s done", since(started))
}

// A checkout in a directory the postgres user cannot traverse (/root, mode 0700, while working
// as root) must still run: acv dev keeps the cluster where the server's user reaches it and
// finds it again on a restart. It also writes .acv/env, which points the acv command at the
// stack.
func TestDevRunsInsidePrivateDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds acv and runs acv dev")
	}
	work, err := os.MkdirTemp("", "acv-devprivate-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(work, 0o700); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(work, "checkout", ".acv")
	h := &devHarness{t: t, work: work, data: data, bin: filepath.Join(work, "acv")}
	t.Cleanup(h.cleanup)
	if out, err := exec.Command("go", "build", "-o", h.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/acv: %v\n%s", err, out)
	}
	for run := 1; run <= 2; run++ {
		dev := h.start()
		resp, err := http.Get(dev.base + "/healthz")
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("run %d: /healthz answered %d", run, resp.StatusCode)
		}
		var d demo
		b, err := os.ReadFile(filepath.Join(data, "demo.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		cl := &client.Client{BaseURL: dev.base, KeyID: d.KeyID, Secret: d.Secret}
		if _, err := cl.Project(context.Background(), d.ProjectID); err != nil {
			t.Fatalf("run %d: read the demo project: %v", run, err)
		}
		// .acv/env points the CLI at the stack (its URLs, which the harness read from it, are
		// TestDevServersAskForPasswords' subject).
		env, err := os.ReadFile(filepath.Join(data, "env"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "export ACV_MASTER_KEY_FILE='" + filepath.Join(data, "master.key") + "'"; !strings.Contains(string(env), want) {
			t.Errorf("run %d: .acv/env lacks %q:\n%s", run, want, env)
		}
		// It logs the CLI in to the console's admin API with a token kept beside it, which a
		// restart reuses; no configuration directory is involved.
		tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
		if fi, serr := os.Stat(filepath.Join(data, "admin.token")); err != nil || serr != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("run %d: admin.token: %v %v", run, err, serr)
		}
		if want := "export ACV_ADMIN_TOKEN='" + strings.TrimSpace(string(tok)) + "'"; !strings.Contains(string(env), want) || !strings.Contains(string(env), "export ACV_ADMIN_URL='http://") {
			t.Errorf("run %d: .acv/env lacks the admin API's URL and %q:\n%s", run, want, env)
		}
		// Sourced (twice, as a second terminal or a re-run does), it puts this acv first on
		// PATH, once: the README's `source .acv/env; acv project list` works as written.
		sh := exec.Command("bash", "-c", `source "$1" && source "$1" && command -v acv && acv project create --name FromEnv && acv project list -o table && printf 'PATH=%s\n' "$PATH"`,
			"bash", filepath.Join(data, "env"))
		sh.Env = append(devEnv(), "XDG_CONFIG_HOME="+filepath.Join(work, "config"))
		out, err := sh.CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"FromEnv"`) || strings.Count(string(out), "FromEnv") != 1+run {
			t.Errorf("run %d: source .acv/env && acv project create && acv project list: %v\n%s", run, err, out)
		}
		if first, _, _ := strings.Cut(string(out), "\n"); first != h.bin {
			t.Errorf("run %d: after source .acv/env, acv is %q, want %s", run, first, h.bin)
		}
		if n := strings.Count(string(out), filepath.Dir(h.bin)+":"); n != 1 {
			t.Errorf("run %d: PATH holds %s %d times after sourcing twice:\n%s", run, filepath.Dir(h.bin), n, out)
		}
		if got, want := h.envVars("ACV_DEV_CONSOLE_URL")["ACV_DEV_CONSOLE_URL"], h.waitLine(dev, consoleLine)[1]; got != want {
			t.Errorf("run %d: .acv/env has ACV_DEV_CONSOLE_URL=%q; the banner says %s", run, got, want)
		}
		if os.Geteuid() == 0 {
			// The server runs as postgres, which cannot enter work (0700): the cluster is elsewhere.
			loc, err := os.ReadFile(filepath.Join(data, "pg.location"))
			if err != nil || strings.HasPrefix(strings.TrimSpace(string(loc)), work) {
				t.Errorf("run %d: cluster location %q, %v; want one outside %s", run, loc, err, work)
			}
		}
		if code := h.stop(dev, syscall.SIGTERM); code != 0 {
			t.Errorf("run %d: acv dev exited with %d after SIGTERM", run, code)
		}
	}
}

func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }

// devHarness runs `acv dev` processes on one data directory, one at a time.
type devHarness struct {
	t               *testing.T
	work, data, bin string
	// args are more flags for acv dev.
	args []string
	runs int
	cur  *devProcess
}

type devProcess struct {
	cmd      *exec.Cmd
	done     chan struct{}
	log      string
	base     string // API base URL
	redisURL string // ACV_REDIS_URL of the data directory's env file
	pgURL    string // ACV_DATABASE_URL of the data directory's env file
}

// banner is acv dev's line saying it serves; the Redis and PostgreSQL URLs in it hide their
// passwords.
var banner = regexp.MustCompile(`(?m)^acv is running on (http://\S+) \(Redis (\S+), PostgreSQL ([^ ,]+), Kafka `)

// consoleLine is acv dev's line naming the operator console's address.
var consoleLine = regexp.MustCompile(`(?m)^operator console: (http://\S+) `)

// start runs `acv dev` and waits for its banner.
func (h *devHarness) start() *devProcess {
	h.t.Helper()
	h.runs++
	logPath := filepath.Join(h.work, fmt.Sprintf("dev-%d.log", h.runs))
	f, err := os.Create(logPath)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	// Free ports, so a test never takes the addresses a developer's make run prefers.
	cmd := exec.Command(h.bin, append([]string{"dev", "--dir", h.data, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}, h.args...)...)
	cmd.Env = append(devEnv(), "ACV_LOG_LEVEL=warn", "ACV_ADMIN_ADDR=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = f, f
	// A test binary that dies takes acv dev with it, and acv dev its servers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	p := &devProcess{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	h.cur = p
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ := os.ReadFile(logPath)
		if m := banner.FindSubmatch(out); m != nil {
			p.base = string(m[1])
			p.redisURL, p.pgURL = h.envURLs()
			return p
		}
		select {
		case <-p.done:
			h.t.Fatalf("acv dev (run %d) exited before it served: %s\n%s", h.runs, cmd.ProcessState, tail(out))
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("acv dev (run %d) printed no banner in 2 minutes:\n%s", h.runs, tail(out))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// envURLs are the Redis and PostgreSQL URLs of the data directory's env file, as a shell that
// sources it sees them: acv dev writes it before its banner.
func (h *devHarness) envURLs() (redisURL, pgURL string) {
	h.t.Helper()
	sh := exec.Command("bash", "-c", `source "$1" && printf '%s\n%s\n' "$ACV_REDIS_URL" "$ACV_DATABASE_URL"`,
		"bash", filepath.Join(h.data, "env"))
	sh.Env = devEnv()
	out, err := sh.Output()
	if err != nil {
		h.t.Fatalf("source %s: %v", filepath.Join(h.data, "env"), err)
	}
	redisURL, pgURL, _ = strings.Cut(strings.TrimSuffix(string(out), "\n"), "\n")
	if redisURL == "" || pgURL == "" {
		h.t.Fatalf("%s sets ACV_REDIS_URL %q and ACV_DATABASE_URL %q", filepath.Join(h.data, "env"), redisURL, pgURL)
	}
	return redisURL, pgURL
}

// devEnv is the test's environment without the settings that would point acv dev elsewhere.
func devEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KAFKA_BROKERS", "ACV_PIPELINE", "ACV_HTTP_ADDR", "ACV_ROLES", "ACV_LOG_LEVEL", "ACV_DEBUG_ADDR",
			"ACV_DEV_PROMETHEUS", "ACV_DEV_PROMETHEUS_ADDR", "ACV_DEV_KAFKA", "ACV_ADMIN_URL", "ACV_ADMIN_TOKEN":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// stop sends sig and waits for the process to end, returning its exit code (-1 when a signal
// ended it).
func (h *devHarness) stop(p *devProcess, sig syscall.Signal) int {
	h.t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		out, _ := os.ReadFile(p.log)
		h.t.Errorf("acv dev did not stop within 60s of %s:\n%s", sig, tail(out))
	}
	code := p.cmd.ProcessState.ExitCode()
	if code != 0 {
		out, _ := os.ReadFile(p.log)
		h.t.Logf("acv dev exited with %d after %s:\n%s", code, sig, tail(out))
	}
	return code
}

// loadUntilSignal drives concurrent signed verifies of distinct codes at dev, sends sig once
// 2,000 were acknowledged, and returns the codes whose verify was answered success and how many
// verifies were sent in all.
func (h *devHarness) loadUntilSignal(p *devProcess, d demo, codes []string, sig syscall.Signal) (acked []string, tried int) {
	h.t.Helper()
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	defer tr.CloseIdleConnections()
	cl := &client.Client{BaseURL: p.base, KeyID: d.KeyID, Secret: d.Secret,
		HTTP: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
	var (
		mu   sync.Mutex
		ok   atomic.Int64
		next atomic.Int64
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	by := "devtest"
	for w := 0; w < 48; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := int(next.Add(1) - 1)
				if i >= len(codes) {
					return
				}
				res, _, err := cl.Verify(context.Background(), d.ProjectID, contract.VerifyRequest{Code: codes[i], VerifiedBy: &by}, client.Options{})
				if err != nil {
					time.Sleep(5 * time.Millisecond) // the server is going away: do not spin
					continue
				}
				if res.Success {
					mu.Lock()
					acked = append(acked, codes[i])
					mu.Unlock()
					ok.Add(1)
				}
			}
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for ok.Load() < 2000 {
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			out, _ := os.ReadFile(p.log)
			h.t.Fatalf("only %d verifies acknowledged in a minute:\n%s", ok.Load(), tail(out))
		}
		time.Sleep(time.Millisecond)
	}
	if sig == syscall.SIGKILL {
		_ = p.cmd.Process.Signal(sig)
		<-p.done
	} else if code := h.stop(p, sig); code != 0 {
		out, _ := os.ReadFile(p.log)
		h.t.Errorf("acv dev exited with %d after %s:\n%s", code, sig, tail(out))
	}
	close(stop)
	wg.Wait()
	return acked, min(int(next.Load()), len(codes))
}

// waitLogged waits until the restarted dev's outbox is empty and every acknowledged code has
// its log, or 30 seconds passed, and counts the acknowledged codes with exactly one success row
// and a verified_at (logged), without either (lost), and with more than one success row.
func (h *devHarness) waitLogged(p *devProcess, projectID string, acked []string) (logged, lost, dups int) {
	h.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.pgURL)
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close(ctx)
	opt, err := redis.ParseURL(p.redisURL)
	if err != nil {
		h.t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pending, _, err := audit.OutboxLen(ctx, rdb, cache.Outboxes())
		if err != nil {
			h.t.Fatal(err)
		}
		logged, lost, dups = countLogged(h.t, conn, projectID, acked)
		if pending == 0 && lost == 0 || time.Now().After(deadline) {
			if pending != 0 {
				h.t.Errorf("the outbox still holds %d entries 30s after the restart", pending)
			}
			return logged, lost, dups
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func countLogged(t *testing.T, conn *pgx.Conn, projectID string, codes []string) (logged, lost, dups int) {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT c.verified_at IS NOT NULL,
		       count(l.id) FILTER (WHERE l.action = 'verify' AND l.result = 'success')
		FROM codes c LEFT JOIN verification_logs l ON l.code_id = c.id
		WHERE c.project_id = $1::uuid AND c.code = ANY($2)
		GROUP BY c.id, c.verified_at`, projectID, codes)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var verified bool
		var n int
		if err := rows.Scan(&verified, &n); err != nil {
			t.Fatal(err)
		}
		seen++
		switch {
		case n > 1:
			dups++
		case n == 1 && verified:
			logged++
		default:
			lost++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return logged, lost + len(codes) - seen, dups
}

// addCodes adds n unused codes to the project, to PostgreSQL only, as an import of a big
// batch leaves most of them: Redis loads each on its first verify.
func addCodes(t *testing.T, pgURL, projectID string, n int) []string {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	prefix := "PROBE-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + "-"
	codes := make([]string, n)
	batch := make([]contract.NewCode, n)
	for i := range codes {
		codes[i] = fmt.Sprintf("%s%06d", prefix, i+1)
		batch[i] = contract.NewCode{Code: codes[i]}
	}
	if _, err := st.InsertCodes(ctx, projectID, batch); err != nil {
		t.Fatal(err)
	}
	return codes
}

// cleanup stops the running acv dev and any server a killed one left behind, then removes the
// directory.
func (h *devHarness) cleanup() {
	if p := h.cur; p != nil {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	}
	pgDir := filepath.Join(h.data, "pg")
	external := false
	if b, err := os.ReadFile(filepath.Join(h.data, "pg.location")); err == nil {
		pgDir, external = strings.TrimSpace(string(b)), true
	}
	for _, pidFile := range []string{filepath.Join(h.data, "redis", "redis.pid"), filepath.Join(pgDir, "postmaster.pid")} {
		killPidFile(pidFile)
	}
	if external && pgDir != "" {
		if err := os.RemoveAll(pgDir); err != nil {
			h.t.Logf("remove %s: %v", pgDir, err)
		}
	}
	if err := os.RemoveAll(h.work); err != nil {
		h.t.Logf("remove %s: %v", h.work, err)
	}
}

// killPidFile kills the process a pid file names, when it is still running.
func killPidFile(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s.Text()))
	if err != nil || pid <= 1 {
		return
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return
	}
	if name := strings.TrimSpace(string(comm)); name == "redis-server" || name == "postgres" {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
