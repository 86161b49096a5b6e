package faults_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// `make run KAFKA=real` runs `acv dev --kafka real` (ACV_DEV_KAFKA=real): the whole service on
// loopback with its logs going through a one-node Apache Kafka of the newest line that acv dev
// starts itself. A verify of a demo code must reach PostgreSQL through that broker, and SIGTERM
// must stop everything, the broker included, and remove its storage.
func TestDevRunsOnRealKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs acv dev with a Kafka broker")
	}
	t.Parallel()
	bin := testkit.ACVBinary(t)
	work, err := os.MkdirTemp("", "acv-devkafka-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	// The postgres user (the server runs as it when we are root) must reach its directory.
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(work, "data")
	logPath := filepath.Join(work, "dev.log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(bin, "dev", "--dir", data, "--addr", "127.0.0.1:0")
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "ACV_") && !strings.HasPrefix(name, "KAFKA_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "ACV_DEV_KAFKA=real", "ACV_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})

	banner := regexp.MustCompile(`acv is running on (http://\S+) \(Redis \S+, PostgreSQL ([^ ,]+), Kafka (\S+) \(Apache Kafka ` +
		regexp.QuoteMeta(localenv.Kafka4) + `, fresh storage in (\S+)\)\)`)
	var m []string
	testkit.WaitFor(t, 3*time.Minute, "acv dev's banner naming its Apache Kafka", func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		if m = banner.FindStringSubmatch(string(b)); m != nil {
			return true, ""
		}
		select {
		case <-done:
			t.Fatalf("acv dev exited: %s\n%s", cmd.ProcessState, b)
		default:
		}
		return false, string(b)
	})
	base, kafkaDir := m[1], m[4]
	serving := time.Since(started)
	// The banner hides the database's password; the env file acv dev wrote before it has the URL.
	envURL, err := exec.Command("bash", "-c", `source "$1" && printf %s "$ACV_DATABASE_URL"`, "bash", filepath.Join(data, "env")).Output()
	if err != nil {
		t.Fatalf("source %s: %v", filepath.Join(data, "env"), err)
	}
	pgURL := string(envURL)

	var demo struct {
		ProjectID string `json:"project_id"`
		KeyID     string `json:"key_id"`
		Secret    string `json:"secret"`
	}
	b, err := os.ReadFile(filepath.Join(data, "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &demo); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var code string
	if err := conn.QueryRow(ctx, `SELECT code FROM codes WHERE project_id = $1 AND verified_at IS NULL LIMIT 1`, demo.ProjectID).Scan(&code); err != nil {
		t.Fatal(err)
	}
	cl := &client.Client{BaseURL: base, KeyID: demo.KeyID, Secret: demo.Secret}
	res, _, err := cl.Verify(ctx, demo.ProjectID, contract.VerifyRequest{Code: code}, client.Options{})
	if err != nil || !res.Success {
		t.Fatalf("verify %s: %+v %v", code, res, err)
	}
	verified := time.Now()
	testkit.WaitFor(t, time.Minute, "the verify's log row, through Kafka", func() (bool, string) {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM verification_logs WHERE code_id = $1 AND result = 'success'`, *res.CodeID).Scan(&n)
		return err == nil && n == 1, "no row yet"
	})
	logged := time.Since(verified)

	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("acv dev did not stop within a minute of SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		b, _ := os.ReadFile(logPath)
		t.Errorf("acv dev exited with %d after SIGTERM:\n%s", code, b)
	}
	if _, err := os.Stat(kafkaDir); !os.IsNotExist(err) {
		t.Errorf("the broker's storage %s is left after acv dev stopped (%v)", kafkaDir, err)
	}
	report(t, "acv dev --kafka real served %s after its start (Kafka at %s); a verify's log row reached PostgreSQL through it %s later",
		serving.Round(time.Millisecond), m[3], logged.Round(time.Millisecond))
}
