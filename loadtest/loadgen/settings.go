package loadgen

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/internal/safecsv"
)

// Limits are the thresholds every scenario sets on its load phase, as the k6 scripts'
// standardThresholds do (P95_MS, P99_MS, MAX_FAILED_RATE, MIN_CHECKS_RATE).
type Limits struct {
	P95Ms, P99Ms  float64 // request duration p(95) and p(99) must stay below these
	MaxFailedRate float64 // share of requests answered outside 2xx/3xx, or not at all, at most
	MinChecksRate float64 // share of passed checks at least
}

// ScenarioSettings are one scenario's settings, as its k6 script in loadtest/k6 reads them; a
// field the scenario has no use for is ignored.
type ScenarioSettings struct {
	Duration       time.Duration // length of the load phase (contention runs Rounds instead)
	Rate           float64       // iterations started per second (an open model); reactivate's 0: each VU cycles back to back
	VUs, MaxVUs    int           // concurrent iterations: pre-allocated, at most
	MaxDroppedRate float64       // share of scheduled iterations that may not start for want of a free VU
	Prefix         string        // codes of this prefix only (redeem, contention, reactivate)
	Limits         Limits

	AuditSample int           // redeem: successful verifies whose log is checked afterwards (0: every one)
	AuditWait   time.Duration // redeem: how long to wait for those logs

	Codes, Attempts, Rounds      int           // contention: codes raced for, verifies of each by a VU a round, rounds
	VerifyPhase, ReactivatePhase time.Duration // contention: each round's two phases

	CodesPerVU int     // reactivate: codes each VU cycles through
	ReadBack   float64 // reactivate: share of cycles that read the code back after each step

	Mix []MixEntry // readmix: the reads and their weights
}

// MixEntry is one read of the mix and its weight.
type MixEntry struct {
	Name   string
	Weight float64
}

// Settings are every scenario's settings and the per-request timeout.
type Settings struct {
	Timeout                                 time.Duration
	Redeem, Contention, Reactivate, ReadMix ScenarioSettings
}

// DefaultMix is readmix's default mix.
const DefaultMix = "project:1,list_unused:2,list_used:2,list_page:1,search:2,by_id:2,by_code:3"

// SettingsFromEnv reads the settings from the environment variables of loadtest/run.sh and
// run-k6.sh (loadtest/README.md) with the k6 scripts' defaults, so one environment drives both.
func SettingsFromEnv(lookup func(string) string) (Settings, error) {
	e := envReader{lookup: lookup}
	dur := e.duration("DURATION", 15*time.Second)
	dropped := e.float("MAX_DROPPED_RATE", 0.01)
	failed, checks := e.float("MAX_FAILED_RATE", 0), e.float("MIN_CHECKS_RATE", 1)
	// The latency limits are shared, but each scenario has its own default: read once, they
	// replace that default only when set.
	latency := func(name string) func(def float64) float64 {
		if strings.TrimSpace(lookup(name)) == "" {
			return func(def float64) float64 { return def }
		}
		v := e.float(name, 0)
		return func(float64) float64 { return v }
	}
	p95Of, p99Of := latency("P95_MS"), latency("P99_MS")
	// Each scenario's settings are named after it (REDEEM_RATE, REDEEM_VUS, REDEEM_MAX_VUS,
	// REDEEM_PREFIX).
	scenario := func(name string, rate float64, vus, maxPerVU int, p95, p99 float64) ScenarioSettings {
		vus = e.integer(name+"_VUS", vus)
		return ScenarioSettings{Duration: dur, Rate: e.float(name+"_RATE", rate), VUs: vus,
			MaxVUs: e.integer(name+"_MAX_VUS", maxPerVU*vus), MaxDroppedRate: dropped, Prefix: lookup(name + "_PREFIX"),
			Limits: Limits{P95Ms: p95Of(p95), P99Ms: p99Of(p99), MaxFailedRate: failed, MinChecksRate: checks}}
	}
	s := Settings{Timeout: e.duration("HTTP_TIMEOUT", 10*time.Second),
		Redeem: scenario("REDEEM", 100, 50, 4, 200, 500), Contention: scenario("CONTENTION", 0, 50, 1, 1000, 2000),
		Reactivate: scenario("REACTIVATE", 0, 10, 1, 200, 500), ReadMix: scenario("READMIX", 50, 20, 5, 300, 800)}
	s.Redeem.AuditSample, s.Redeem.AuditWait = e.integer("AUDIT_SAMPLE", 0), e.duration("AUDIT_WAIT_SECS", 15*time.Second)
	c := &s.Contention
	c.Codes, c.Attempts = e.integer("CONTENTION_CODES", 5), e.integer("ATTEMPTS", 2)
	c.VerifyPhase, c.ReactivatePhase = e.duration("VERIFY_SECS", 2*time.Second), e.duration("REACTIVATE_SECS", time.Second)
	c.Rounds = e.integer("ROUNDS", max(1, int(dur/max(c.VerifyPhase+c.ReactivatePhase, 1)))) // as many as fit in DURATION
	s.Reactivate.CodesPerVU, s.Reactivate.ReadBack = e.integer("REACTIVATE_PER_VU", 5), e.float("READBACK", 0.2)
	var err error
	if s.ReadMix.Mix, err = ParseMix(cmp.Or(lookup("MIX"), DefaultMix)); err != nil {
		e.errs = append(e.errs, err.Error())
	}
	if len(e.errs) > 0 {
		return s, fmt.Errorf("settings: %s", strings.Join(e.errs, "; "))
	}
	return s, nil
}

// ParseMix reads a mix such as DefaultMix: name:weight pairs of readmix's reads.
func ParseMix(s string) ([]MixEntry, error) {
	var out []MixEntry
	total := 0.0
	for _, part := range strings.Split(s, ",") {
		name, w, _ := strings.Cut(strings.TrimSpace(part), ":")
		weight, err := number(w)
		if _, known := readEndpoints[name]; !known || err != nil || weight < 0 {
			return nil, fmt.Errorf("MIX: bad entry %q; reads: %s", part, strings.Join(slices.Sorted(maps.Keys(readEndpoints)), ", "))
		}
		total += weight
		out = append(out, MixEntry{Name: name, Weight: weight})
	}
	if total <= 0 {
		return nil, fmt.Errorf("MIX: the weights add up to zero")
	}
	return out, nil
}

// envReader parses environment variables, collecting every malformed one once.
type envReader struct {
	lookup func(string) string
	errs   []string
}

// get is the variable name read by parse, or def when it is unset; a value parse refuses is
// recorded as not being what.
func get[T any](e *envReader, name, what string, def T, parse func(string) (T, error)) T {
	v := strings.TrimSpace(e.lookup(name))
	if v == "" {
		return def
	}
	n, err := parse(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%s: not %s", name, v, what))
		return def
	}
	return n
}

func (e *envReader) integer(name string, def int) int {
	return get(e, name, "an integer", def, strconv.Atoi)
}

func (e *envReader) float(name string, def float64) float64 {
	return get(e, name, "a number", def, number)
}

// duration reads a duration as k6 writes them: a number of seconds (VERIFY_SECS=1.5), or units
// such as 15s, 2m, 1m30s, 500ms.
func (e *envReader) duration(name string, def time.Duration) time.Duration {
	return get(e, name, "a duration such as 30s, 2m, 1m30s", def, func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if n, nerr := number(v); nerr == nil {
			d, err = time.Duration(n*float64(time.Second)), nil
		}
		if err == nil && d < 0 {
			err = errors.New("negative")
		}
		return d, err
	})
}

// number is a finite float.
func number(v string) (float64, error) {
	n, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(n) || math.IsInf(n, 0)) {
		err = errors.New("not finite")
	}
	return n, err
}

// Code is one row of the CSV `acv codes export` writes (id,code,state,...).
type Code struct {
	ID, Value, State string
}

// ReadCodes reads the export at path of `acv codes export`: a header id,code,state,... and one
// row a code, cells unescaped as safecsv escapes them ('=X reads as =X).
func ReadCodes(path string) ([]Code, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open codes: %w", err)
	}
	defer f.Close()
	cr := safecsv.NewReader(f)
	head, err := cr.Read()
	if err != nil || len(head) < 3 || head[0] != "id" || head[1] != "code" || head[2] != "state" {
		return nil, fmt.Errorf("%s: not an export of `acv codes export` (header id,code,state,...)", path)
	}
	var out []Code
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read codes: %w", path, err)
		}
		if len(rec) >= 3 {
			out = append(out, Code{ID: rec[0], Value: rec[1], State: rec[2]})
		}
	}
}

// SelectCodes keeps the codes of prefix and, when states are given, of one of them: one export
// feeds several scenarios, each on codes of its own prefix.
func SelectCodes(codes []Code, prefix string, states ...string) []Code {
	var out []Code
	for _, c := range codes {
		if strings.HasPrefix(c.Value, prefix) && (len(states) == 0 || slices.Contains(states, c.State)) {
			out = append(out, c)
		}
	}
	return out
}
