package loadgen

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// redeemBy is the verified_by of redeem's verifies; the audit check looks for it in the logs.
const redeemBy = "acvload-redeem"

// redeem is loadtest/k6/redeem.js: an open model of verifies, each of a different unused code,
// then the audit of their logs. It uses up its codes.
func (x *run) redeem(ctx context.Context, s ScenarioSettings) error {
	codes := SelectCodes(x.r.Codes, s.Prefix, "unused")
	needed := iterations(s.Rate, s.Duration)
	if needed == 0 {
		return fmt.Errorf("a rate of %g/s for %s starts no verify", s.Rate, s.Duration)
	}
	if len(codes) < needed {
		return fmt.Errorf("redeem needs %d unused codes (rate %g/s x %s); the export has %d of prefix %q: generate more with `acv codes generate` and export again",
			needed, s.Rate, s.Duration, len(codes), s.Prefix)
	}
	x.logf("redeem: %g verifies/s for %s over %d of %d unused codes", s.Rate, s.Duration, needed, len(codes))

	var mu sync.Mutex
	var redeemed []Code
	x.open(ctx, s.Rate, s.Duration, max(s.VUs, s.MaxVUs), func(_ int, i int64) {
		if i >= int64(len(codes)) {
			x.unexpected("iteration %d: no unused code left in the export", i)
			return
		}
		row := codes[i]
		a := x.verify(ctx, phaseLoad, row.Value, redeemBy)
		if a.interrupted {
			return
		}
		b := a.decode()
		if x.succeeded("verify", "verify "+row.Value, a,
			check{"verify: code_id is the code's id", b.str("code_id") == row.ID},
			check{"verify: verified_at set", b.isInt("verified_at")}) {
			x.add("redeem_success", 1)
			mu.Lock()
			redeemed = append(redeemed, row)
			mu.Unlock()
		}
	})
	x.audit(ctx, redeemed, s)

	x.expect("audit_log_missing", "==", 0)
	x.expect("audit_log_duplicated", "==", 0)
	x.expect("dropped_iterations", "<=", math.Floor(s.MaxDroppedRate*float64(needed)))
	return nil
}

// audit checks the contract's promise that an acknowledged verify's log is never lost and never
// written twice: each sampled code shows exactly one log, its verify's, within s.AuditWait.
func (x *run) audit(ctx context.Context, redeemed []Code, s ScenarioSettings) {
	sample := redeemed
	if n := s.AuditSample; n > 0 && n < len(redeemed) {
		sample = make([]Code, n)
		for k := range sample {
			sample[k] = redeemed[k*len(redeemed)/n]
		}
	}
	for _, c := range []string{"audit_log_missing", "audit_log_duplicated", "audit_checked"} {
		x.add(c, 0)
	}
	deadline := time.Now().Add(s.AuditWait)
	parallel(sample, 8, func(row Code) {
		for ctx.Err() == nil {
			a := x.codeByValue(ctx, phaseTeardown, "by_code", row.Value)
			// No log yet (or no answer): ask again until the deadline.
			if logs, _ := a.decode()["verification_logs"].([]any); a.status == 200 && len(logs) > 0 {
				switch entry, _ := logs[0].(map[string]any); {
				case len(logs) > 1:
					x.add("audit_log_duplicated", 1)
					x.warnf("audit: %s has %d verification logs, want 1: %s", row.Value, len(logs), a.body)
				case object(entry).str("result") != "success" || object(entry).str("verified_by") != redeemBy:
					x.add("audit_log_missing", 1)
					x.warnf("audit: %s: the one log is not the successful verify: %s", row.Value, a.body)
				default:
					x.add("audit_checked", 1)
				}
				return
			}
			if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(500*time.Millisecond)) {
				break
			}
		}
		x.add("audit_log_missing", 1)
		x.warnf("audit: no verification log for %s after %s", row.Value, s.AuditWait)
	})
	x.notes = append(x.notes, fmt.Sprintf("audit: %d of %d successful verifies checked; %d show exactly their verify's log, %d missing, %d duplicated",
		len(sample), len(redeemed), int(x.count("audit_checked")), int(x.count("audit_log_missing")), int(x.count("audit_log_duplicated"))))
}

// parallel runs fn on every item, n at a time.
func parallel[T any](items []T, n int, fn func(T)) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(it)
		})
	}
	wg.Wait()
}
