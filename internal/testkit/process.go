package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/secrets"
)

// acvBinary is cmd/acv of this checkout, built once per test binary into its temporary directory.
var acvBinary = sync.OnceValues(func() (string, error) {
	if err := suite.init(); err != nil {
		return "", err
	}
	path := filepath.Join(suite.dir, "bin", "acv")
	if out, err := exec.Command("go", "build", "-o", path, "github.com/acv/acv/cmd/acv").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/acv: %w\n%s", err, out)
	}
	return path, nil
})

// ACVBinary is cmd/acv of this checkout, built on first use, so every test of the binary runs
// the same build.
func ACVBinary(tb testing.TB) string {
	tb.Helper()
	path, err := acvBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// Service is one `acv serve` child process that a test may kill and start again, on the same
// addresses, logging to LogFile. It is stopped when the test ends; a failed test shows its log.
type Service struct {
	// Name identifies the process in messages; it is also its ACV_INSTANCE unless the settings
	// name one.
	Name string
	// HTTPAddr is the API listener (ACV_HTTP_ADDR), DebugAddr the debug listener
	// (ACV_DEBUG_ADDR: /metrics, /healthz, /readyz), each "127.0.0.1:port".
	HTTPAddr, DebugAddr string
	// LogFile holds what the process printed.
	LogFile string

	t    testing.TB
	bin  string
	env  []string
	api  bool
	mu   sync.Mutex
	proc *localenv.Process
}

// StartService runs `acv serve` with settings (variable → value) over the test's environment
// without ACV_*, KAFKA_* and OTEL_*, and waits until it serves. ACV_HTTP_ADDR, ACV_DEBUG_ADDR
// and ACV_ADMIN_ADDR get free ports unless named (an empty ACV_ADMIN_ADDR runs no console).
func StartService(tb testing.TB, name string, settings map[string]string) *Service {
	tb.Helper()
	s := &Service{Name: name, t: tb, bin: ACVBinary(tb), LogFile: filepath.Join(tb.TempDir(), name+".log")}
	set := map[string]string{"ACV_INSTANCE": name, "ACV_LOG_LEVEL": "info"}
	maps.Copy(set, settings)
	for _, k := range []string{"ACV_HTTP_ADDR", "ACV_DEBUG_ADDR", "ACV_ADMIN_ADDR"} {
		if v, named := settings[k]; v == "" && (k != "ACV_ADMIN_ADDR" || !named) {
			set[k] = freeAddr(tb)
		}
	}
	s.HTTPAddr, s.DebugAddr = set["ACV_HTTP_ADDR"], set["ACV_DEBUG_ADDR"]
	s.api = set["ACV_ROLES"] == "" || strings.Contains(set["ACV_ROLES"], "api")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ACV_") && !strings.HasPrefix(kv, "KAFKA_") && !strings.HasPrefix(kv, "OTEL_") {
			s.env = append(s.env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		s.env = append(s.env, k+"="+set[k])
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("--- %s: end of %s:\n%s", s.Name, s.LogFile, s.Tail(40))
		}
		s.running().Stop(10 * time.Second)
	})
	s.Start()
	return s
}

func freeAddr(tb testing.TB) string {
	addr, err := localenv.FreeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

func (s *Service) running() *localenv.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Start starts the process (again, after Kill or Stop) and waits up to a minute until it
// answers /healthz (debug listener, and API with that role), failing the test otherwise.
func (s *Service) Start() {
	s.t.Helper()
	if p := s.running(); p != nil && !p.Exited() {
		s.t.Fatalf("%s: started while running", s.Name)
	}
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = s.env
	p, err := localenv.Launch(s.Name, cmd, s.LogFile)
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	urls := []string{"http://" + s.DebugAddr + "/healthz"}
	if s.api {
		urls = append(urls, "http://"+s.HTTPAddr+"/healthz")
	}
	err = localenv.Poll(context.Background(), time.Minute, 50*time.Millisecond, func() error {
		if p.Exited() {
			s.t.Fatalf("%s exited before it served (exit code %d):\n%s", s.Name, p.ExitCode(), s.Tail(40))
		}
		for _, u := range urls {
			if code, _, err := fetchURL(u, time.Second); err != nil || code != http.StatusOK {
				return fmt.Errorf("%s: %d %v", u, code, err)
			}
		}
		return nil
	})
	if err != nil {
		s.t.Fatalf("%s does not serve a minute after its start (%v):\n%s", s.Name, err, s.Tail(40))
	}
}

// Kill ends the process with SIGKILL, as a crash or the OOM killer would: no drain, no flush,
// nothing acknowledged that was in flight. It returns once the process is gone.
func (s *Service) Kill() { s.running().Kill() }

// Stop ends the process with SIGTERM, as an orchestrator does, and fails the test when it has
// not exited within a minute or exited with an error.
func (s *Service) Stop() {
	s.t.Helper()
	p := s.running()
	if p == nil {
		return
	}
	if !p.Stop(time.Minute) {
		s.t.Errorf("%s did not stop within a minute of SIGTERM:\n%s", s.Name, s.Tail(40))
	} else if code := p.ExitCode(); code != 0 {
		s.t.Errorf("%s exited with %d after SIGTERM:\n%s", s.Name, code, s.Tail(40))
	}
}

// Tail is the last n lines the process printed.
func (s *Service) Tail(n int) string { return localenv.TailFile(s.LogFile, n) }

// Readiness is what /readyz of the debug listener answered: its status and each
// dependency's check ("ok" or "unavailable").
type Readiness struct {
	Status int               `json:"-"`
	Checks map[string]string `json:"checks"`
}

// Ready asks the debug listener's /readyz.
func (s *Service) Ready() (Readiness, error) {
	code, body, err := fetchURL("http://"+s.DebugAddr+"/readyz", 5*time.Second)
	if err != nil {
		return Readiness{}, err
	}
	r := Readiness{Status: code}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("%s /readyz: %w: %s", s.Name, err, body)
	}
	return r, nil
}

// Metrics scrapes the debug listener's /metrics.
func (s *Service) Metrics() (localenv.Metrics, error) {
	code, body, err := fetchURL("http://"+s.DebugAddr+"/metrics", 10*time.Second)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: HTTP %d", s.Name, code)
	}
	return localenv.ParseMetrics(string(body)), nil
}

func fetchURL(url string, timeout time.Duration) (int, []byte, error) {
	resp, err := (&http.Client{Timeout: timeout}).Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// ProcessSettings are the settings of `acv serve` processes on the stack's servers, with a new
// master key the operator seals API keys with from now on: create their keys after this call.
func (s *Stack) ProcessSettings(tb testing.TB) map[string]string {
	tb.Helper()
	mk, err := secrets.GenerateKey("process")
	if err != nil {
		tb.Fatal(err)
	}
	keys, err := secrets.New(mk)
	if err != nil {
		tb.Fatal(err)
	}
	s.Config.MasterKeys, s.Admin.Keys = keys, keys
	set := map[string]string{
		"ACV_REDIS_URL":    s.Config.RedisURL,
		"ACV_DATABASE_URL": s.Config.DatabaseURL,
		"ACV_MASTER_KEY":   mk.Line(),
		// Several tests' processes share one PostgreSQL server and two cores.
		"ACV_PG_MAX_CONNS":    "8",
		"ACV_REDIS_POOL_SIZE": "64",
		"ACV_SHUTDOWN_DRAIN":  "5s",
		// Not a line per request: the processes' logs are read when a test fails.
		"ACV_LOG_LEVEL": "warn",
	}
	if len(s.Config.KafkaBrokers) > 0 {
		set["KAFKA_BROKERS"] = strings.Join(s.Config.KafkaBrokers, ",")
		set["ACV_KAFKA_TOPIC"] = s.Config.KafkaTopic
		set["ACV_KAFKA_PARTITIONS"] = strconv.Itoa(s.Config.Partitions)
		set["ACV_CONSUMER_GROUP"] = s.Config.ConsumerGroup
	}
	return set
}
