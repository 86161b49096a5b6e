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

// RedeemSettings are redeem's: distinct-code verifies at a target rate (loadtest/k6/redeem.js).
type RedeemSettings struct {
	Rate           float64       // verifies started per second (an open model)
	Duration       time.Duration // length of the load phase
	VUs, MaxVUs    int           // concurrent verifies: pre-allocated, at most
	MaxDroppedRate float64       // share of scheduled verifies that may not start for want of a free VU
	AuditSample    int           // successful verifies whose log is checked afterwards (0: every one)
	AuditWait      time.Duration // how long to wait for those logs
	Prefix         string        // codes of this prefix only
	Limits         Limits
}

// ContentionSettings are contention's: VUs race for few codes, round after round
// (loadtest/k6/contention.js).
type ContentionSettings struct {
	VUs, Codes, Attempts, Rounds int
	VerifyPhase, ReactivatePhase time.Duration
	Prefix                       string
	Limits                       Limits
}

// ReactivateSettings are reactivate's: verify → reactivate cycles on codes of each VU's own
// (loadtest/k6/reactivate.js).
type ReactivateSettings struct {
	VUs, CodesPerVU int
	Duration        time.Duration
	Rate            float64 // cycles per second (an open model); 0: each VU cycles back to back
	ReadBack        float64 // share of cycles that read the code back after each step
	Prefix          string
	Limits          Limits
}

// ReadMixSettings are readmix's: the read endpoints in a weighted mix at a target rate
// (loadtest/k6/readmix.js).
type ReadMixSettings struct {
	Rate           float64
	Duration       time.Duration
	VUs, MaxVUs    int
	MaxDroppedRate float64
	Mix            []MixEntry
	Limits         Limits
}

// MixEntry is one read of the mix and its weight.
type MixEntry struct {
	Name   string
	Weight float64
}

// Settings are every scenario's settings and the per-request timeout.
type Settings struct {
	Timeout    time.Duration
	Redeem     RedeemSettings
	Contention ContentionSettings
	Reactivate ReactivateSettings
	ReadMix    ReadMixSettings
}

// DefaultMix is readmix's default mix.
const DefaultMix = "project:1,list_unused:2,list_used:2,list_page:1,search:2,by_id:2,by_code:3"

// SettingsFromEnv reads the settings from the environment variables of loadtest/run.sh and
// run-k6.sh (loadtest/README.md) with the k6 scripts' defaults, so one environment drives both.
func SettingsFromEnv(lookup func(string) string) (Settings, error) {
	e := envReader{lookup: lookup}
	var s Settings
	s.Timeout = e.duration("HTTP_TIMEOUT", 10*time.Second)
	dur := e.duration("DURATION", 15*time.Second)
	limits := func(p95, p99 float64) Limits {
		return Limits{P95Ms: e.float("P95_MS", p95), P99Ms: e.float("P99_MS", p99),
			MaxFailedRate: e.float("MAX_FAILED_RATE", 0), MinChecksRate: e.float("MIN_CHECKS_RATE", 1)}
	}
	dropped := e.float("MAX_DROPPED_RATE", 0.01)

	vus := e.integer("REDEEM_VUS", 50)
	s.Redeem = RedeemSettings{Rate: e.float("REDEEM_RATE", 100), Duration: dur, VUs: vus,
		MaxVUs: e.integer("REDEEM_MAX_VUS", 4*vus), MaxDroppedRate: dropped,
		AuditSample: e.integer("AUDIT_SAMPLE", 0), AuditWait: e.seconds("AUDIT_WAIT_SECS", 15*time.Second),
		Prefix: lookup("REDEEM_PREFIX"), Limits: limits(200, 500)}

	c := ContentionSettings{VUs: e.integer("CONTENTION_VUS", 50), Codes: e.integer("CONTENTION_CODES", 5),
		Attempts: e.integer("ATTEMPTS", 2), VerifyPhase: e.seconds("VERIFY_SECS", 2*time.Second),
		ReactivatePhase: e.seconds("REACTIVATE_SECS", time.Second), Prefix: lookup("CONTENTION_PREFIX"),
		Limits: limits(1000, 2000)}
	round := max(c.VerifyPhase+c.ReactivatePhase, 1) // as many rounds as fit in DURATION
	c.Rounds = e.integer("ROUNDS", max(1, int(dur/round)))
	s.Contention = c

	s.Reactivate = ReactivateSettings{VUs: e.integer("REACTIVATE_VUS", 10), CodesPerVU: e.integer("REACTIVATE_PER_VU", 5),
		Duration: dur, Rate: e.float("REACTIVATE_RATE", 0), ReadBack: e.float("READBACK", 0.2),
		Prefix: lookup("REACTIVATE_PREFIX"), Limits: limits(200, 500)}

	vus = e.integer("READMIX_VUS", 20)
	s.ReadMix = ReadMixSettings{Rate: e.float("READMIX_RATE", 50), Duration: dur, VUs: vus,
		MaxVUs: e.integer("READMIX_MAX_VUS", 5*vus), MaxDroppedRate: dropped, Limits: limits(300, 800)}
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

// envReader parses environment variables, collecting every malformed one.
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

// seconds reads a number of seconds (VERIFY_SECS=1.5).
func (e *envReader) seconds(name string, def time.Duration) time.Duration {
	return get(e, name, "a number of seconds", def, seconds)
}

func (e *envReader) duration(name string, def time.Duration) time.Duration {
	return get(e, name, "a duration such as 30s, 2m, 1m30s", def, parseDuration)
}

// number is a finite float.
func number(v string) (float64, error) {
	n, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(n) || math.IsInf(n, 0)) {
		err = errors.New("not finite")
	}
	return n, err
}

func seconds(v string) (time.Duration, error) {
	n, err := number(v)
	if err == nil && n < 0 {
		err = errors.New("negative")
	}
	return time.Duration(n * float64(time.Second)), err
}

// parseDuration reads a duration as k6 writes them: a number of seconds, or units such as
// 15s, 2m, 1m30s, 1h, 500ms.
func parseDuration(v string) (time.Duration, error) {
	if d, err := seconds(v); err == nil {
		return d, nil
	}
	d, err := time.ParseDuration(v)
	if err == nil && d < 0 {
		err = errors.New("negative")
	}
	return d, err
}

// Code is one row of the CSV `acv codes export` writes (id,code,state,...).
type Code struct {
	ID, Value, State string
}

// ReadCodesFile reads the export at path (see ReadCodes).
func ReadCodesFile(path string) ([]Code, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open codes: %w", err)
	}
	defer f.Close()
	codes, err := ReadCodes(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return codes, nil
}

// ReadCodes reads an export of `acv codes export`: a header id,code,state,... and one row a
// code, cells unescaped as safecsv escapes them ('=X reads as =X).
func ReadCodes(r io.Reader) ([]Code, error) {
	cr := safecsv.NewReader(r)
	head, err := cr.Read()
	if err != nil || len(head) < 3 || head[0] != "id" || head[1] != "code" || head[2] != "state" {
		return nil, errors.New("not an export of `acv codes export` (header id,code,state,...)")
	}
	var out []Code
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read codes: %w", err)
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
