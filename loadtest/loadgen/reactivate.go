package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// reactivate is loadtest/k6/reactivate.js: each VU cycles verify → reactivate through codes of
// its own, reading back (read your writes) with probability s.ReadBack. The codes end unused.
func (x *run) reactivate(ctx context.Context, s ScenarioSettings) error {
	if s.VUs < 1 || s.CodesPerVU < 1 {
		return fmt.Errorf("VUs (%d) and codes per VU (%d) must be at least 1", s.VUs, s.CodesPerVU)
	}
	pool, reset, err := x.ownCodes(ctx, s.Prefix, s.VUs*s.CodesPerVU) // VUs x codes per VU
	if err != nil {
		return err
	}
	x.logf("reactivate: %d VUs x %d codes each for %s, %d reset by setup", s.VUs, s.CodesPerVU, s.Duration, reset)
	// Each VU's place in its own codes; a VU runs one cycle at a time.
	cursor := make([]int, s.VUs+1)
	cycle := func(vu int) {
		code := pool[(vu-1)*s.CodesPerVU+cursor[vu]%s.CodesPerVU].Value
		cursor[vu]++
		x.cycle(ctx, code, fmt.Sprintf("acvload-vu%d", vu), rand.Float64() < s.ReadBack)
	}
	if s.Rate > 0 {
		x.open(ctx, s.Rate, s.Duration, s.VUs, func(vu int, _ int64) { cycle(vu) })
	} else {
		x.loadPhase(0, func() { closedModel(ctx, s.VUs, s.Duration, cycle) })
	}
	x.expect("cycles_ok", ">", 0)
	return nil
}

// cycle verifies and reactivates code as who, reading it back after each step when readBack.
func (x *run) cycle(ctx context.Context, code, who string, readBack bool) {
	v := x.verify(ctx, phaseLoad, code, who)
	if v.interrupted {
		return
	}
	verified := x.succeeded("verify", "verify "+code, v)
	seen := !verified || !readBack || x.readBack(ctx, code, true, who)

	r := x.reactivateCode(ctx, phaseLoad, code, who, "acvload reactivate cycle")
	if r.interrupted {
		return
	}
	reactivated := x.succeeded("reactivate", "reactivate "+code, r)
	seenAgain := !reactivated || !readBack || x.readBack(ctx, code, false, who)
	if verified && reactivated && seen && seenAgain {
		x.add("cycles_ok", 1)
	}
}

// readBack checks code shows the state just acknowledged: used by who, or unused.
func (x *run) readBack(ctx context.Context, code string, wantUsed bool, who string) bool {
	a := x.codeByValue(ctx, phaseLoad, "by_code", code)
	if a.interrupted {
		return true
	}
	c := a.decode()
	state := c["status"] == false && c.isNull("verified_at")
	if wantUsed {
		state = c["status"] == true && c.str("verified_by") == who && c.isInt("verified_at")
	}
	step := map[bool]string{true: "read-back after verify ", false: "read-back after reactivate "}[wantUsed]
	return x.checks(step+code, a, check{"read-back: status 200", a.status == 200},
		check{"read-back: state is the acknowledged one", state})
}
