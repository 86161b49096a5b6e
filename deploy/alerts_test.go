package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

const (
	// alertHold replaces every alert's `for:` in the test's copy of the rules.
	alertHold = 3 * time.Second
	// loadRate is the steady load, verifies a second over both API replicas.
	loadRate = 40
	// redisSlowdown is added each way between the API replicas and Redis: every Redis round
	// trip takes 60 ms longer, so every verify misses the 50 ms objective.
	redisSlowdown = 30 * time.Millisecond
)

// fault is one failure the test injects into the running stack and then repairs.
type fault struct {
	name string
	// want are the alerts that must go pending, then firing, and resolve after the repair.
	want []alertRef
	// quiet are alerts that must not fire from the injection until want resolved: they would
	// name another cause than the fault. (A pending one, a scrape that timed out once on a busy
	// machine, is only logged.)
	quiet           []alertRef
	inject, recover func()
	// fireWithin bounds the wait for want to fire; the fault then lasts linger longer before
	// the repair, so that a quiet alert that went pending with want would fire too.
	fireWithin, linger time.Duration
}

// faultRun is when the test injected a fault and started to repair it.
type faultRun struct {
	fault
	injected, recovering    time.Time
	injectTook, recoverTook time.Duration
}

// TestAlertsFireInPrometheus runs the real Prometheus, scraping every second, against a stack
// of separate processes under a steady load of verifies: two API replicas (`acv serve`, API
// role) that reach Redis through a latency-injecting proxy, one pipeline worker (relay and
// consumer) on a one-node Apache Kafka and a PostgreSQL of the test's own. Prometheus loads the
// project's rule file with every `for:` cut to alertHold and every expression unchanged. The
// test then stops Kafka, stops PostgreSQL, kills the pipeline worker and slows Redis down, one
// at a time, and watches through Prometheus' alerts API the matching alert go pending, then
// firing, and resolve once the fault is repaired. It logs, for every alert seen in each fault,
// how long it took to go pending and to fire after the fault and to resolve after the repair.
func TestAlertsFireInPrometheus(t *testing.T) {
	start := time.Now()
	if testkit.OnRedisCluster(t) {
		t.Skip("the latency proxy stands in front of one redis-server; ACV_TEST_REDIS=cluster runs the stack on a cluster")
	}
	bin := prometheusBinary(t)
	checkDeployConfigJobs(t)
	rulesPath, err := filepath.Abs(promRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	rules := rulesWithFor(t, rulesPath, alertHold)

	// Kafka's JVM starts while PostgreSQL starts and the acv binary is built.
	versions := testkit.KafkaVersions()
	kafka := startKafkaAsync(t, versions[len(versions)-1])
	pg := testkit.StartOwnPostgres(t)
	testkit.ACVBinary(t)
	k := kafka()
	s := testkit.NewStackWith(t, testkit.StackOptions{PostgresURL: pg.URL(), Kafka: k})
	settings := s.ProcessSettings(t)
	tn := s.NewTenant(nil)
	codes := make([]string, 12000)
	for i := range codes {
		codes[i] = fmt.Sprintf("ALERT-%05d", i)
	}
	s.ImportCodes(tn.ProjectID, nil, codes...)

	proxy := StartLatencyProxy(t, s.Redis.Addr)
	proxied, err := url.Parse(s.Config.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	proxied.Host = proxy.Addr
	process := func(name string, set map[string]string) *testkit.Service {
		all := map[string]string{"ACV_ADMIN_ADDR": ""} // no operator console
		for k, v := range settings {
			all[k] = v
		}
		for k, v := range set {
			all[k] = v
		}
		return testkit.StartService(t, name, all)
	}
	apis := []*testkit.Service{
		process("api-1", map[string]string{"ACV_ROLES": "api", "ACV_REDIS_URL": proxied.String()}),
		process("api-2", map[string]string{"ACV_ROLES": "api", "ACV_REDIS_URL": proxied.String()}),
	}
	worker := process("pipeline", map[string]string{"ACV_ROLES": "relay,consumer", "ACV_KAFKA_SESSION_TIMEOUT": "6s"})

	prom := startPrometheus(t, bin, rules, map[string][]string{
		jobAPI:      {apis[0].DebugAddr, apis[1].DebugAddr},
		jobPipeline: {worker.DebugAddr},
	})
	checkAlertHolds(t, prom)
	alerts := watchAlerts(t, prom)
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxInFlight}, Timeout: 15 * time.Second}
	t.Cleanup(httpc.CloseIdleConnections)
	clients := make([]*client.Client, len(apis))
	for i, a := range apis {
		clients[i] = &client.Client{BaseURL: "http://" + a.HTTPAddr, KeyID: tn.Key.ID, Secret: tn.Key.Secret, HTTP: httpc}
	}
	load := startSteadyLoad(t, clients, tn.ProjectID, codes, loadRate)
	t.Logf("stack, prometheus and a load of %d verifies/s up after %s", loadRate, time.Since(start).Round(time.Millisecond))

	testkit.WaitFor(t, 2*time.Minute, "verifies measured in prometheus", func() (bool, string) {
		q := `job:acv_verify_latency_slo_errors:ratio_rate5m{job="acv-api"} < 0.05`
		r, err := prom.query(q)
		return err == nil && len(r) > 0, fmt.Sprintf("%s: %d results, err %v", q, len(r), err)
	})
	waitHealthy(t, prom, "before the faults")
	t.Logf("healthy after %s; load: %s", time.Since(start).Round(time.Millisecond), load.tally())

	ctx := context.Background()
	const linger = alertHold + 2*time.Second
	faults := []fault{
		{
			name:       "Kafka stopped",
			want:       []alertRef{{name: "AcvKafkaUnreachable"}},
			quiet:      []alertRef{{name: "AcvInstanceDown"}},
			inject:     k.Stop,
			recover:    func() { mustStartKafka(ctx, t, k) },
			fireWithin: time.Minute,
			linger:     linger,
		},
		{
			name:  "PostgreSQL stopped",
			want:  []alertRef{{name: "AcvPostgresUnreachable", job: jobPipeline}, {name: "AcvPostgresUnreachable", job: jobAPI}},
			quiet: []alertRef{{name: "AcvInstanceDown"}, {name: "AcvKafkaUnreachable"}},
			// An immediate shutdown: every connection cut at once, as a crash.
			inject:     pg.Kill,
			recover:    pg.Start,
			fireWithin: time.Minute,
			linger:     linger,
		},
		{
			name: "pipeline worker killed",
			want: []alertRef{{name: "AcvInstanceDown", job: jobPipeline}},
			// Kafka is fine: the lag series are gone because their only reporter is.
			quiet:      []alertRef{{name: "AcvKafkaUnreachable"}},
			inject:     worker.Kill,
			recover:    worker.Start,
			fireWithin: time.Minute,
			linger:     linger,
		},
		{
			name:    fmt.Sprintf("Redis slowed (+%s each way, API to Redis)", redisSlowdown),
			want:    []alertRef{{name: "AcvVerifyLatencyBudgetFastBurn", job: jobAPI}},
			quiet:   []alertRef{{name: "AcvRedisUnreachable"}, {name: "AcvInstanceDown"}},
			inject:  func() { proxy.SetDelay(redisSlowdown) },
			recover: func() { proxy.SetDelay(0) },
			// The burn ratios are over 5m and 1h: both windows hold the whole test, so the slow
			// verifies must reach 14.4% of every verify since the start, and the alert resolves
			// once they are below it again: each second slow takes about six fast ones to
			// resolve, so the slowdown ends as soon as the alert fires.
			fireWithin: 2 * time.Minute,
		},
	}
	var runs []faultRun
	for _, f := range faults {
		for _, a := range f.want {
			alerts.waitInactive(t, a, 90*time.Second)
		}
		r := faultRun{fault: f, injected: time.Now()}
		f.inject()
		r.injectTook = time.Since(r.injected)
		for _, a := range f.want {
			pending, firing := alerts.waitFiring(t, a, r.injected, f.fireWithin)
			t.Logf("%s: %s pending after %s, firing after %s", f.name, a,
				pending.Sub(r.injected).Round(10*time.Millisecond), firing.Sub(r.injected).Round(10*time.Millisecond))
		}
		time.Sleep(f.linger)
		r.recovering = time.Now()
		f.recover()
		r.recoverTook = time.Since(r.recovering)
		for _, a := range f.want {
			resolved := alerts.waitInactive(t, a, 2*time.Minute)
			t.Logf("%s: %s resolved %s after the repair began", f.name, a, resolved.Sub(r.recovering).Round(10*time.Millisecond))
		}
		for _, c := range alerts.history() {
			for _, q := range f.quiet {
				if c.at.Before(r.injected) || !q.matches(c.alert) {
					continue
				}
				switch c.to {
				case "firing":
					t.Errorf("%s: %s fired %s after the injection", f.name, c.id, c.at.Sub(r.injected).Round(10*time.Millisecond))
				case "pending":
					t.Logf("%s: %s went pending %s after the injection", f.name, c.id, c.at.Sub(r.injected).Round(10*time.Millisecond))
				}
			}
		}
		// The next fault starts on a stack that caught up, so the alerts the catching up
		// raises (a late log is AcvAuditDelayHigh) are counted to this one.
		waitHealthy(t, prom, "after "+f.name)
		runs = append(runs, r)
		t.Logf("%s: injected in %s, repaired in %s; load meanwhile: %s", f.name,
			r.injectTook.Round(time.Millisecond), r.recoverTook.Round(time.Millisecond), load.tally())
	}
	load.stopLoad()
	t.Logf("alerts seen (times of Prometheus' alerts API polled every %s; pending and firing after the fault, resolved after the repair began; * = the fault's alert):\n%s",
		alertPoll, alertTable(runs, alerts.history()))
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// waitHealthy waits until Prometheus sees the stack healthy under the load, and has evaluated
// the rules on it: every target up, the consumer group's lag read from Kafka, logs written to
// PostgreSQL in the last 5 s and the outbox's oldest entry younger than 5 s.
func waitHealthy(t *testing.T, prom *promServer, when string) {
	t.Helper()
	testkit.WaitFor(t, 2*time.Minute, "prometheus to see the stack healthy "+when, func() (bool, string) {
		for _, q := range []string{
			`count(up{job=~"acv-.*"} == 1) == 3`,
			`acv:consumer_lag_messages:sum`,
			`sum(increase(acv_consumer_events_written_total[5s])) > 0`,
			`acv:outbox_oldest_age_seconds:max < 5`,
		} {
			r, err := prom.query(q)
			if err != nil || len(r) == 0 {
				return false, fmt.Sprintf("%s: %d results, err %v", q, len(r), err)
			}
		}
		return true, ""
	})
	healthy := time.Now().Add(time.Second) // one more scrape
	testkit.WaitFor(t, 20*time.Second, "prometheus to evaluate the rules "+when, func() (bool, string) {
		last := prom.lastEvaluation(t)
		return last.After(healthy), fmt.Sprintf("rules last evaluated at %s", last)
	})
}

// startKafkaAsync starts a one-node Apache Kafka of the test's own, which it may stop and
// start again, in the background; the function it returns waits for it and fails the test
// when it did not start. The cluster is torn down when the test ends.
func startKafkaAsync(t *testing.T, version string) func() *localenv.Kafka {
	t.Helper()
	dir := t.TempDir()
	done := make(chan struct{})
	var k *localenv.Kafka
	var err error
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		k, err = localenv.StartKafka(ctx, dir, testkit.KafkaOptions(version, 1))
	}()
	t.Cleanup(func() {
		<-done
		k.Close()
	})
	return func() *localenv.Kafka {
		t.Helper()
		<-done
		if err != nil {
			t.Fatalf("start kafka %s: %v", version, err)
		}
		t.Logf("Apache Kafka %s started in %s", k.Version, k.Started.Round(time.Millisecond))
		return k
	}
}

func mustStartKafka(ctx context.Context, t *testing.T, k *localenv.Kafka) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka again: %v", err)
	}
}

// checkAlertHolds makes sure Prometheus loaded the test's copy of the rules: every alert that
// has a hold time has alertHold.
func checkAlertHolds(t *testing.T, p *promServer) {
	t.Helper()
	var body struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name     string  `json:"name"`
					Type     string  `json:"type"`
					Duration float64 `json:"duration"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/rules?type=alert", &body); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range body.Data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Duration != 0 && r.Duration != alertHold.Seconds() {
				t.Errorf("alert %s holds %gs, want %s", r.Name, r.Duration, alertHold)
			}
		}
	}
	if n == 0 {
		t.Fatal("prometheus loaded no alerting rule")
	}
}

// alertTable lists, per fault, every alert that went pending or firing between the fault and
// the next one: when it went pending and firing after the fault was injected, and when it
// resolved after the repair began (or that it had not by the end).
func alertTable(runs []faultRun, hist []alertChange) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "fault\talert\t\tpending\tfiring\tresolved\t")
	since := func(at, from time.Time) string {
		if at.IsZero() {
			return "-"
		}
		return at.Sub(from).Round(100 * time.Millisecond).String()
	}
	for i, r := range runs {
		end := time.Now()
		if i+1 < len(runs) {
			end = runs[i+1].injected
		}
		type row struct{ pending, firing, resolved time.Time }
		rows := map[string]*row{}
		var order []string
		for _, c := range hist {
			x := rows[c.id]
			switch {
			case x == nil && c.before == "inactive" && !c.at.Before(r.injected) && c.at.Before(end):
				x = &row{}
				rows[c.id] = x
				order = append(order, c.id)
			case x == nil:
				continue
			}
			switch c.to {
			case "pending":
				if x.pending.IsZero() {
					x.pending = c.at
				}
			case "firing":
				if x.firing.IsZero() {
					x.firing = c.at
				}
			case "inactive":
				if !x.firing.IsZero() && x.resolved.IsZero() {
					x.resolved = c.at
				}
			}
		}
		for _, id := range order {
			x := rows[id]
			mark := ""
			for _, a := range r.want {
				if strings.HasPrefix(id, a.name+"{") && (a.job == "" || strings.Contains(id, fmt.Sprintf("job=%q", a.job))) {
					mark = "*"
				}
			}
			resolved := since(x.resolved, r.recovering)
			if resolved == "-" && !x.firing.IsZero() {
				resolved = "firing at the end"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\n", r.name, id, mark, since(x.pending, r.injected), since(x.firing, r.injected), resolved)
		}
		if len(order) == 0 {
			fmt.Fprintf(w, "%s\t(none)\t\t\t\t\t\n", r.name)
		}
	}
	w.Flush()
	return b.String()
}
