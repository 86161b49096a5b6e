package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// contention is loadtest/k6/contention.js (loadtest/README.md): VUs race for few codes, round
// after round; exactly one verify of each code may succeed in a round. An answer after its
// phase ended (phase_overrun) or a verifier cut short makes the round counts no evidence.
func (x *run) contention(ctx context.Context, s ScenarioSettings) error {
	if s.VerifyPhase < time.Second || s.ReactivatePhase < time.Second {
		return errors.New("VERIFY_SECS and REACTIVATE_SECS must be at least 1")
	}
	if s.VUs < 1 || s.Codes < 1 || s.Attempts < 1 || s.Rounds < 1 {
		return fmt.Errorf("VUs (%d), codes (%d), attempts (%d) and rounds (%d) must be at least 1", s.VUs, s.Codes, s.Attempts, s.Rounds)
	}
	codes, reset, err := x.ownCodes(ctx, s.Prefix, s.Codes)
	if err != nil {
		return err
	}
	// Every (round, code) has a count, so a round without a success shows 0.
	for r := range s.Rounds {
		for c := range s.Codes {
			x.add(roundCounter(r, c), 0)
		}
	}
	round := s.VerifyPhase + s.ReactivatePhase
	x.logf("contention: %d rounds of %s verify + %s reactivate; %d VUs x %d attempts on %d codes (%d reset by setup)",
		s.Rounds, s.VerifyPhase, s.ReactivatePhase, s.VUs, s.Attempts, s.Codes, reset)

	x.loadPhase(0, func() {
		base := time.Now()
		var wg sync.WaitGroup
		for r := range s.Rounds {
			start := base.Add(time.Duration(r) * round)
			for vu := 1; vu <= s.VUs; vu++ {
				wg.Go(func() { x.verifyRound(ctx, s, codes, r, vu, start) })
			}
			wg.Go(func() { x.reactivateRound(ctx, s, codes, r, start.Add(s.VerifyPhase), start.Add(round)) })
		}
		wg.Wait()
	})

	x.expect("phase_overrun", "==", 0)
	x.expect("verifier_iterations_completed", "==", float64(s.VUs*s.Rounds))
	x.expect("redeem_success", "==", float64(s.Codes*s.Rounds))
	x.expect("reactivate_success", "==", float64(s.Codes*s.Rounds))
	for r := range s.Rounds {
		for c := range s.Codes {
			x.expect(roundCounter(r, c), "==", 1)
		}
	}
	return nil
}

// roundCounter is the success count of code c (its index) in round r.
func roundCounter(r, c int) string {
	return fmt.Sprintf("redeem_success{round:%d,code:%d}", r, c)
}

// verifyRound is one VU's verify phase of round r. Like a k6 iteration with maxDuration
// VerifyPhase and gracefulStop ReactivatePhase, it is cut short once both have passed.
func (x *run) verifyRound(ctx context.Context, s ScenarioSettings, codes []Code, r, vu int, start time.Time) {
	end := start.Add(s.VerifyPhase)
	ctx, cancel := context.WithDeadline(ctx, end.Add(s.ReactivatePhase))
	defer cancel()
	if !sleepUntil(ctx, start) {
		return
	}
	who := fmt.Sprintf("acvload-vu%d", vu)
	for a := 0; a < s.Attempts; a++ {
		// A later attempt that could not finish inside the phase is not sent.
		if a > 0 && time.Now().After(end.Add(-s.VerifyPhase/4)) {
			break
		}
		answers := make([]answer, len(codes))
		var wg sync.WaitGroup
		for c, code := range codes {
			wg.Go(func() {
				answers[c] = x.verify(ctx, phaseLoad, code.Value, who)
			})
		}
		wg.Wait()
		if late := time.Since(end); late > 0 {
			x.add("phase_overrun", 1)
			x.warnf("round %d: a verify batch was answered %s after the verify phase ended", r, late.Round(time.Millisecond))
		}
		for c, ans := range answers {
			if ans.interrupted {
				continue
			}
			x.add("verify_attempts", 1)
			b := ans.decode()
			won := b["success"] == true
			lost := b["success"] == false && b.str("error_code") == "CODE_ALREADY_USED"
			if x.checks(fmt.Sprintf("round %d verify %s", r, codes[c].Value), ans,
				check{"verify: status 200", ans.status == 200},
				check{"verify: success or CODE_ALREADY_USED", ans.status == 200 && (won || lost)}) && won {
				x.add("redeem_success", 1)
				x.add(roundCounter(r, c), 1)
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
	x.add("verifier_iterations_completed", 1)
}

// reactivateRound is round r's reactivate phase: from notBefore, one VU reactivates every code
// before the round's end.
func (x *run) reactivateRound(ctx context.Context, s ScenarioSettings, codes []Code, r int, notBefore, end time.Time) {
	ctx, cancel := context.WithDeadline(ctx, notBefore.Add(s.ReactivatePhase+s.VerifyPhase))
	defer cancel()
	if !sleepUntil(ctx, notBefore) {
		return
	}
	for _, code := range codes {
		a := x.reactivateCode(ctx, phaseLoad, code.Value, "acvload-contention", fmt.Sprintf("round %d", r))
		if a.interrupted {
			return
		}
		if late := time.Since(end); late > 0 {
			x.add("phase_overrun", 1)
			x.warnf("round %d: a reactivate was answered %s after the round ended", r, late.Round(time.Millisecond))
		}
		if x.succeeded("reactivate", fmt.Sprintf("round %d reactivate %s", r, code.Value), a) {
			x.add("reactivate_success", 1)
		}
	}
}

// ownCodes takes the first n unused or used codes of prefix and reactivates those an
// interrupted run left used (reset counts them); a code missing, disabled or expired is an error.
func (x *run) ownCodes(ctx context.Context, prefix string, n int) (codes []Code, reset int, err error) {
	codes = SelectCodes(x.r.Codes, prefix, "unused", "used")
	if len(codes) < n {
		return nil, 0, fmt.Errorf("%s needs %d unused or used codes of prefix %q in the export; it has %d", x.scenario, n, prefix, len(codes))
	}
	codes = codes[:n]
	for _, row := range codes {
		a := x.codeByValue(ctx, phaseSetup, "by_code", row.Value)
		c := a.decode()
		if a.status != 200 || c == nil {
			return nil, reset, fmt.Errorf("setup: GET code %s: %s", row.Value, a)
		}
		if c["is_disabled"] == true || c["is_expired"] == true {
			return nil, reset, fmt.Errorf("setup: code %s is disabled or expired; export fresh codes", row.Value)
		}
		if c["status"] == true {
			r := x.reactivateCode(ctx, phaseSetup, row.Value, "acvload-setup", "reset before load test")
			if r.status != 200 || r.decode()["success"] != true {
				return nil, reset, fmt.Errorf("setup: reactivate %s: %s", row.Value, r)
			}
			reset++
		}
	}
	return codes, reset, nil
}
