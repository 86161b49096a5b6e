package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// forLine matches the hold time of an alert in a rule file, `for: 2m`.
var forLine = regexp.MustCompile(`^(\s+for:\s*)(\S+)(\s*)$`)

// rulesWithFor writes a copy of the rule file at path, with every alert's `for:` set to hold
// and nothing else changed, into a directory of the test and returns the copy's path: the
// project's expressions, unchanged, pending and firing within seconds instead of minutes.
func rulesWithFor(t *testing.T, path string, hold time.Duration) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	n := 0
	for i, l := range lines {
		if m := forLine.FindStringSubmatch(l); m != nil {
			lines[i] = m[1] + hold.String() + m[3]
			n++
		}
	}
	if n == 0 {
		t.Fatalf("%s has no `for:` line to shorten", path)
	}
	copyPath := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(copyPath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return copyPath
}

// promAlert is one alert of Prometheus' /api/v1/alerts: an alerting rule's series that is
// pending or firing.
type promAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
	Value    string            `json:"value"`
}

// id names an alert by its rule and the labels that tell its series apart, as Alertmanager
// would: `AcvInstanceDown{instance="…",job="acv-pipeline"}`.
func (a promAlert) id() string {
	keys := make([]string, 0, len(a.Labels))
	for k := range a.Labels {
		if k != "alertname" && k != "severity" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, a.Labels[k])
	}
	return a.Labels["alertname"] + "{" + strings.Join(parts, ",") + "}"
}

// alerts lists the pending and firing alerts, from Prometheus' own alerts API.
func (p *promServer) alerts() ([]promAlert, error) {
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/alerts", &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("alerts API: status %q", body.Status)
	}
	return body.Data.Alerts, nil
}

// alertRef selects the alerts of one rule, of one scrape job when job is set.
type alertRef struct {
	name, job string
}

func (r alertRef) String() string {
	if r.job == "" {
		return r.name
	}
	return fmt.Sprintf("%s{job=%q}", r.name, r.job)
}

func (r alertRef) matches(a promAlert) bool {
	return a.Labels["alertname"] == r.name && (r.job == "" || a.Labels["job"] == r.job)
}

// alertChange is one change of an alert's state as the watch saw it: to "pending", "firing"
// or "inactive" (gone from the alerts API).
type alertChange struct {
	at     time.Time
	id     string
	alert  promAlert
	to     string
	before string
}

// alertWatch polls Prometheus' alerts API every 200 ms, in the background, and keeps every
// state change of every alert; the test waits on it and reads the times from it.
type alertWatch struct {
	prom *promServer

	mu      sync.Mutex
	cur     map[string]promAlert
	changes []alertChange
	polls   int
	lastErr error
	stop    chan struct{}
	done    chan struct{}
}

const alertPoll = 200 * time.Millisecond

// watchAlerts starts polling; it stops when the test ends (before Prometheus, started earlier,
// is killed).
func watchAlerts(t *testing.T, p *promServer) *alertWatch {
	w := &alertWatch{prom: p, cur: map[string]promAlert{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(func() {
		close(w.stop)
		<-w.done
	})
	return w
}

func (w *alertWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(alertPoll)
	defer tick.Stop()
	for {
		w.poll()
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

func (w *alertWatch) poll() {
	as, err := w.prom.alerts()
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	if err != nil {
		w.lastErr = err
		return
	}
	seen := map[string]bool{}
	for _, a := range as {
		id := a.id()
		seen[id] = true
		before, ok := w.cur[id]
		if !ok || before.State != a.State {
			from := "inactive"
			if ok {
				from = before.State
			}
			w.changes = append(w.changes, alertChange{at: now, id: id, alert: a, to: a.State, before: from})
		}
		w.cur[id] = a
	}
	for id, a := range w.cur {
		if !seen[id] {
			w.changes = append(w.changes, alertChange{at: now, id: id, alert: a, to: "inactive", before: a.State})
			delete(w.cur, id)
		}
	}
}

// active are the alerts r selects that are pending or firing now.
func (w *alertWatch) active(r alertRef) []promAlert {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []promAlert
	for _, a := range w.cur {
		if r.matches(a) {
			out = append(out, a)
		}
	}
	return out
}

// history is every change seen so far, in order.
func (w *alertWatch) history() []alertChange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]alertChange(nil), w.changes...)
}

// state is a one-line account of the watch: what is active, how often it polled, its last
// error.
func (w *alertWatch) state() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]string, 0, len(w.cur))
	for id, a := range w.cur {
		ids = append(ids, id+" "+a.State)
	}
	sort.Strings(ids)
	return fmt.Sprintf("active: [%s]; %d polls, last error %v", strings.Join(ids, "; "), w.polls, w.lastErr)
}

// waitFiring waits until an alert r selects has been seen pending and then firing since
// since, and returns when each was first seen. It fails the test when that does not happen
// within within.
func (w *alertWatch) waitFiring(t *testing.T, r alertRef, since time.Time, within time.Duration) (pending, firing time.Time) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pendingAt := map[string]time.Time{}
		for _, c := range w.history() {
			if c.at.Before(since) || !r.matches(c.alert) {
				continue
			}
			if _, seen := pendingAt[c.id]; c.to == "pending" && !seen {
				pendingAt[c.id] = c.at
			}
			if p, seen := pendingAt[c.id]; c.to == "firing" && seen {
				return p, c.at
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not seen pending then firing within %s of %s (%d pending); %s", r, within,
				since.Format("15:04:05.000"), len(pendingAt), w.state())
		}
		time.Sleep(alertPoll / 2)
	}
}

// waitInactive waits until no alert r selects is pending or firing, and returns when the watch
// first saw that; it fails the test after within.
func (w *alertWatch) waitInactive(t *testing.T, r alertRef, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		w.mu.Lock()
		polls := w.polls
		w.mu.Unlock()
		if len(w.active(r)) == 0 {
			// The time of the last change of r to inactive, or now when it never was active.
			at := time.Now()
			hist := w.history()
			for i := len(hist) - 1; i >= 0; i-- {
				if r.matches(hist[i].alert) {
					if hist[i].to == "inactive" {
						at = hist[i].at
					}
					break
				}
			}
			if polls > 0 {
				return at
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still active %s later; %s", r, within, w.state())
		}
		time.Sleep(alertPoll / 2)
	}
}
