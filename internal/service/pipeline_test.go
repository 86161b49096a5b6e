package service_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/testkit"
)

// Which pipeline a configuration runs, and which role sets it accepts: without Kafka the relay
// writes to PostgreSQL itself (direct), and only a process with nothing but the consumer role
// is refused.
func TestPipelineRule(t *testing.T) {
	relay := service.Roles{Relay: true}
	worker := service.Roles{Relay: true, Consumer: true}
	consumer := service.Roles{Consumer: true}
	brokers := []string{"127.0.0.1:9092"}
	for _, tc := range []struct {
		name      string
		pipeline  string
		brokers   []string
		roles     service.Roles
		wantKafka bool
		wantErr   string
	}{
		{"relay without kafka is direct", "", nil, relay, false, ""},
		{"relay and consumer without kafka: the consumer is skipped", "", nil, worker, false, ""},
		{"consumer alone without kafka", "", nil, consumer, false, "consumer-only"},
		{"brokers set: kafka", "", brokers, worker, true, ""},
		{"direct asked for with brokers set", service.PipelineDirect, brokers, worker, false, ""},
		{"kafka asked for without brokers", service.PipelineKafka, nil, relay, true, "KAFKA_BROKERS is required"},
		{"kafka asked for with brokers", service.PipelineKafka, brokers, consumer, true, ""},
		{"unknown pipeline", "fast", brokers, relay, true, "ACV_PIPELINE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := service.Config{RedisURL: "redis://127.0.0.1:6379/0", DatabaseURL: "postgres://acv@127.0.0.1/acv",
				Pipeline: tc.pipeline, KafkaBrokers: tc.brokers, Roles: tc.roles}
			if got := cfg.UsesKafka(); got != tc.wantKafka && tc.pipeline != "fast" {
				t.Errorf("UsesKafka() = %v, want %v", got, tc.wantKafka)
			}
			err := cfg.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

// The direct pipeline runs the whole service without Kafka: the Kafka brokers named are not
// even reachable, yet every acknowledged verify reaches PostgreSQL once, the outbox drains,
// readiness is OK without a kafka check, and no process asks Kafka for consumer lag.
func TestDirectPipelineNeedsNoKafka(t *testing.T) {
	s := testkit.NewStack(t)
	port, err := localenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Config
	cfg.Pipeline = service.PipelineDirect
	cfg.KafkaBrokers = []string{"127.0.0.1:1"} // nothing listens there
	cfg.Roles = service.Roles{API: true, Relay: true, Consumer: true}
	cfg.DebugAddr = fmt.Sprintf("127.0.0.1:%d", port)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.RunClean("direct pipeline", cfg, ln)
	tn := s.NewTenant(nil, "http://"+ln.Addr().String())

	const n = 60
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("DIRECT-%03d", i)
	}
	s.ImportCodes(tn.ProjectID, nil, values...)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, v := range values {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _, err := tn.Clients[0].Verify(context.Background(), tn.ProjectID, contract.VerifyRequest{Code: v}, client.Options{})
			if err == nil && !res.Success {
				err = fmt.Errorf("verify %s: %s", v, res.Message)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.WaitDrained(t, tn.ProjectID, n, 20*time.Second)
	for _, v := range values {
		if got := s.LogCount(s.CodeID(t, tn.ProjectID, v)); got != 1 {
			t.Errorf("code %s has %d logs, want 1", v, got)
		}
	}

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + cfg.DebugAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testkit.WaitFor(t, 10*time.Second, "readiness without kafka", func() (bool, string) {
		code, body := get("/readyz")
		return code == http.StatusOK && !strings.Contains(body, "kafka"), fmt.Sprintf("%d %s", code, body)
	})
	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, absent := range []string{`dependency="kafka"`, "acv_consumer_lag_messages{"} {
		if strings.Contains(body, absent) {
			t.Errorf("/metrics of a direct-pipeline process holds %s", absent)
		}
	}
	if !strings.Contains(body, fmt.Sprintf("acv_consumer_events_written_total %d", n)) {
		t.Errorf("/metrics does not count the %d events the relay wrote to postgres", n)
	}
}
