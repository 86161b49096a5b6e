package service_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// raceAnswer is one verify or reactivate answer of a race, with what the caller sent.
type raceAnswer struct {
	value   string
	by      string
	success bool
	errCode string
	codeID  string
	at      *int64 // verify: verified_at; reactivate: reactivated_at
	message string
}

// raceAction sends racers concurrent requests of one action for every value, spread over the
// tenant's clients (one per API replica), all released at once. It fails the test on any
// transport or HTTP error: a valid request always gets a 200 result body.
func raceAction(t *testing.T, tn *testkit.Tenant, action contract.Action, values []string, racers int, tag string) map[string][]raceAnswer {
	t.Helper()
	n := len(values) * racers
	answers := make(chan raceAnswer, n)
	errs := make(chan error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		value := values[i%len(values)]
		c := tn.Clients[i%len(tn.Clients)]
		by := fmt.Sprintf("%s-%s-%s-%d", action, tag, value, i/len(values))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx := context.Background()
			a := raceAnswer{value: value, by: by}
			switch action {
			case contract.ActionVerify:
				r, _, err := c.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: value, VerifiedBy: &by}, client.Options{})
				if err != nil {
					errs <- fmt.Errorf("verify %s: %w", value, err)
					return
				}
				a.success, a.at, a.message = r.Success, r.VerifiedAt, r.Message
				a.errCode, a.codeID = Deref(r.ErrorCode), Deref(r.CodeID)
			case contract.ActionReactivate:
				reason := "cycle " + tag
				r, _, err := c.Reactivate(ctx, tn.ProjectID, contract.ReactivateRequest{Code: value, ReactivatedBy: &by, Reason: &reason}, client.Options{})
				if err != nil {
					errs <- fmt.Errorf("reactivate %s: %w", value, err)
					return
				}
				a.success, a.at, a.message = r.Success, r.ReactivatedAt, r.Message
				a.errCode, a.codeID = Deref(r.ErrorCode), Deref(r.CodeID)
			}
			answers <- a
		}()
	}
	close(start)
	wg.Wait()
	close(answers)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	out := make(map[string][]raceAnswer, len(values))
	for a := range answers {
		out[a.value] = append(out[a.value], a)
	}
	return out
}

// checkLive reads a code by value through every replica and checks the state fields an
// acknowledged operation must show at once (read your writes), whichever replica answers.
func checkLive(t *testing.T, tn *testkit.Tenant, value, id string, used bool, verifiedAt *int64, by string) {
	t.Helper()
	for i, c := range tn.Clients {
		code, err := c.CodeByValue(context.Background(), tn.ProjectID, value)
		if err != nil {
			t.Fatalf("replica %d: get %s: %v", i, value, err)
		}
		bad := code.ID != id || code.Status != used || code.IsDisabled || code.IsExpired
		if used {
			bad = bad || code.VerifiedAt == nil || *code.VerifiedAt != *verifiedAt || Deref(code.VerifiedBy) != by
		} else {
			bad = bad || code.VerifiedAt != nil || code.VerifiedBy != nil
		}
		if bad {
			t.Fatalf("replica %d: %s reads status=%v verified_at=%v verified_by=%q id=%s disabled=%v expired=%v; want status=%v verified_at=%v verified_by=%q id=%s",
				i, value, code.Status, Show(code.VerifiedAt), Deref(code.VerifiedBy), code.ID, code.IsDisabled, code.IsExpired,
				used, Show(verifiedAt), by, id)
		}
	}
}

// TestVerifyReactivateCycles drives codes (half of them not yet in Redis) through rounds of
// verify and reactivate races across three API replicas (two relays, so events of one code may
// reach Kafka out of order). Each race has exactly one winner; every loser is told why (a
// verify loser also sees the winner's verified_at); every replica shows the winner's state at
// once; after the pipeline drains, Postgres holds exactly one log per attempt with the winners
// as successes, and each code's row carries the final Redis state and version. The odd codes
// skip the last reactivation, so both end states are checked, in the list and statistics too.
func TestVerifyReactivateCycles(t *testing.T) {
	s := testkit.NewStack(t)
	bases := s.StartAPIs(3)
	s.StartPipeline("relay-a", "relay-b")
	tn := s.NewTenant(nil, bases...)
	ctx := context.Background()

	const (
		nCodes = 4
		rounds = 5
		racers = 75 // per code and phase: 300 concurrent requests a phase
	)
	values := make([]string, nCodes)
	for i := range values {
		values[i] = fmt.Sprintf("CYCLE-%d", i)
	}
	// The first half is published to Redis on creation; the second half is only in Postgres
	// (as after a Redis replacement), so the first racers load it concurrently from every replica.
	s.ImportCodes(tn.ProjectID, nil, values[:nCodes/2]...)
	cold := make([]contract.NewCode, 0, nCodes/2)
	for _, v := range values[nCodes/2:] {
		cold = append(cold, contract.NewCode{Code: v})
	}
	if _, err := s.Deps.Store.InsertCodes(ctx, tn.ProjectID, cold); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, v := range values {
		row, err := s.Deps.Store.CodeByValue(ctx, tn.ProjectID, v)
		if err != nil {
			t.Fatal(err)
		}
		ids[v] = row.ID
	}
	// In the last round the odd codes stay verified, so the end state has both kinds.
	endsUsed := func(v string) bool { return v[len(v)-1]%2 == 1 }

	type tally struct {
		attempts              int
		verifyWins, reactWins []string // verified_by / reactivated_by of the winners
		reactReasons          []string
		lastVerifiedAt        *int64
	}
	tallies := map[string]*tally{}
	for _, v := range values {
		tallies[v] = &tally{}
	}

	for round := 1; round <= rounds; round++ {
		tag := fmt.Sprintf("r%d", round)
		before := time.Now().Unix()
		got := raceAction(t, tn, contract.ActionVerify, values, racers, tag)
		after := time.Now().Unix()
		for _, v := range values {
			as := got[v]
			tl := tallies[v]
			tl.attempts += len(as)
			var win *raceAnswer
			for i := range as {
				if as[i].success {
					if win != nil {
						t.Fatalf("round %d: %s verified twice: by %s and %s", round, v, win.by, as[i].by)
					}
					win = &as[i]
				}
			}
			if win == nil {
				t.Fatalf("round %d: no verify of %s succeeded: %+v", round, v, as[0])
			}
			if win.codeID != ids[v] || win.message != "Code verified successfully" || win.errCode != "" ||
				win.at == nil || *win.at < before || *win.at > after {
				t.Fatalf("round %d: winning verify of %s: %+v (code id %s, phase %d..%d)", round, v, *win, ids[v], before, after)
			}
			for _, a := range as {
				if a.success {
					continue
				}
				// Every loser ran after the winner, so it sees the winner's verified_at.
				if a.errCode != string(contract.CodeAlreadyUsed) || a.codeID != ids[v] || a.at == nil || *a.at != *win.at ||
					a.message != "Code has already been used" {
					t.Fatalf("round %d: losing verify of %s: %+v, winner verified_at %d", round, v, a, *win.at)
				}
			}
			tl.verifyWins = append(tl.verifyWins, win.by)
			tl.lastVerifiedAt = win.at
			checkLive(t, tn, v, ids[v], true, win.at, win.by)
		}

		reactivate := values
		if round == rounds {
			reactivate = slices.DeleteFunc(slices.Clone(values), endsUsed)
		}
		got = raceAction(t, tn, contract.ActionReactivate, reactivate, racers, tag)
		for _, v := range reactivate {
			as := got[v]
			tl := tallies[v]
			tl.attempts += len(as)
			wins := 0
			for _, a := range as {
				switch {
				case a.success:
					wins++
					if a.codeID != ids[v] || a.at == nil || a.errCode != "" || a.message != "Code reactivated successfully" {
						t.Fatalf("round %d: winning reactivate of %s: %+v", round, v, a)
					}
					tl.reactWins = append(tl.reactWins, a.by)
					tl.reactReasons = append(tl.reactReasons, "cycle "+tag)
				case a.errCode != string(contract.CodeAlreadyUnused) || a.codeID != ids[v] || a.at != nil:
					t.Fatalf("round %d: losing reactivate of %s: %+v", round, v, a)
				}
			}
			if wins != 1 {
				t.Fatalf("round %d: %d reactivates of %s succeeded, want 1", round, wins, v)
			}
			checkLive(t, tn, v, ids[v], false, nil, "")
		}
	}

	// The pipeline delivers one log per attempt, no more.
	testkit.WaitFor(t, 60*time.Second, "every attempt logged in postgres", func() (bool, string) {
		var state []string
		ok := true
		for _, v := range values {
			n := s.LogCount(ids[v])
			ok = ok && n == tallies[v].attempts
			state = append(state, fmt.Sprintf("%s %d/%d", v, n, tallies[v].attempts))
		}
		return ok, strings.Join(state, ", ")
	})
	testkit.WaitFor(t, 10*time.Second, "outbox drained", s.OutboxEmpty)

	for _, v := range values {
		tl := tallies[v]
		// Logs by kind: the successes are exactly the winners, the failures say why.
		rows, err := s.Deps.Store.Pool().Query(ctx,
			`SELECT action, result, coalesce(reason, ''), coalesce(verified_by, '') FROM verification_logs WHERE code_id = $1`, ids[v])
		if err != nil {
			t.Fatal(err)
		}
		var verifyWins, reactWins, reactReasons []string
		failedVerify, failedReact := 0, 0
		for rows.Next() {
			var action, result, reason, by string
			if err := rows.Scan(&action, &result, &reason, &by); err != nil {
				t.Fatal(err)
			}
			switch {
			case action == "verify" && result == contract.ResultSuccess && reason == "":
				verifyWins = append(verifyWins, by)
			case action == "verify" && result == contract.ResultFailed && reason == string(contract.CodeAlreadyUsed):
				failedVerify++
			case action == "reactivate" && result == contract.ResultReactivated:
				reactWins = append(reactWins, by)
				reactReasons = append(reactReasons, reason)
			case action == "reactivate" && result == contract.ResultFailed && reason == string(contract.CodeAlreadyUnused):
				failedReact++
			default:
				t.Errorf("%s: unexpected log action=%s result=%s reason=%q by=%q", v, action, result, reason, by)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		nReact := len(tl.reactWins)
		wantReact := rounds
		if endsUsed(v) {
			wantReact = rounds - 1
		}
		if nReact != wantReact || !SameSet(verifyWins, tl.verifyWins) || !SameSet(reactWins, tl.reactWins) ||
			!SameSet(reactReasons, tl.reactReasons) || failedVerify != rounds*(racers-1) || failedReact != nReact*(racers-1) {
			t.Errorf("%s logs: verify wins %v (want %v), reactivations %v %v (want %v %v), failed verify %d (want %d), failed reactivate %d (want %d)",
				v, verifyWins, tl.verifyWins, reactWins, reactReasons, tl.reactWins, tl.reactReasons,
				failedVerify, rounds*(racers-1), failedReact, nReact*(racers-1))
		}

		// Postgres applied the snapshots in version order: its row is Redis's final state.
		live, found, err := s.Deps.Cache.LiveCode(ctx, tn.ProjectID, v)
		if err != nil || !found {
			t.Fatalf("%s in redis: found=%v err=%v", v, found, err)
		}
		row, err := s.Deps.Store.CodeByValue(ctx, tn.ProjectID, v)
		if err != nil {
			t.Fatal(err)
		}
		wantVersion := int64(rounds + nReact)
		if live.Version != wantVersion || row.Version != live.Version || row.VerifiedAtMs != live.VerifiedAtMs ||
			row.VerifiedBy != live.VerifiedBy || row.Disabled || live.Disabled {
			t.Errorf("%s: postgres version %d verified_at %dms by %q disabled %v; redis version %d verified_at %dms by %q disabled %v; want version %d",
				v, row.Version, row.VerifiedAtMs, row.VerifiedBy, row.Disabled,
				live.Version, live.VerifiedAtMs, live.VerifiedBy, live.Disabled, wantVersion)
		}
		if endsUsed(v) {
			last := tl.verifyWins[len(tl.verifyWins)-1]
			if row.VerifiedAtMs == 0 || row.VerifiedAtMs/1000 != *tl.lastVerifiedAt || row.VerifiedBy != last {
				t.Errorf("%s: postgres verified_at %dms by %q, want %d s by %q", v, row.VerifiedAtMs, row.VerifiedBy, *tl.lastVerifiedAt, last)
			}
		} else if row.VerifiedAtMs != 0 || row.VerifiedBy != "" {
			t.Errorf("%s: postgres still shows verified_at %dms by %q after the last reactivation", v, row.VerifiedAtMs, row.VerifiedBy)
		}

		code, err := tn.Clients[0].CodeByValue(ctx, tn.ProjectID, v)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(tl.attempts, 100); len(code.VerificationLogs) != want {
			t.Errorf("%s: response shows %d verification logs, want %d", v, len(code.VerificationLogs), want)
		}
	}

	// The list and statistics, which read Postgres, agree once the pipeline drained.
	var wantUsed, wantUnused []string
	for _, v := range values {
		if endsUsed(v) {
			wantUsed = append(wantUsed, v)
		} else {
			wantUnused = append(wantUnused, v)
		}
	}
	checkStates(t, tn, map[contract.State][]string{contract.StateUsed: wantUsed, contract.StateUnused: wantUnused})
}

// checkStates checks through the API that the list filter of every state selects exactly the
// expected codes and that the statistics count them exactly (states absent from want have none).
func checkStates(t *testing.T, tn *testkit.Tenant, want map[contract.State][]string) {
	t.Helper()
	ctx := context.Background()
	c := tn.Clients[len(tn.Clients)-1]
	total := 0
	for _, st := range []contract.State{contract.StateUnused, contract.StateUsed, contract.StateDisabled, contract.StateExpired} {
		total += len(want[st])
		page, err := c.ListCodes(ctx, tn.ProjectID, client.ListParams{Status: string(st), PageSize: 100})
		if err != nil {
			t.Fatalf("list %s: %v", st, err)
		}
		got := Values(page.Items)
		if !SameSet(got, want[st]) || page.Total != int64(len(want[st])) {
			t.Errorf("status=%s lists %v (total %d), want %v", st, got, page.Total, want[st])
		}
	}
	page, err := c.ListCodes(ctx, tn.ProjectID, client.ListParams{PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != int64(total) || len(page.Items) != total {
		t.Errorf("unfiltered list: total %d with %d items, want %d", page.Total, len(page.Items), total)
	}
	p, err := c.Project(ctx, tn.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	wantStats := contract.Statistics{
		TotalCodes: int64(total), UsedCodes: int64(len(want[contract.StateUsed])), UnusedCodes: int64(len(want[contract.StateUnused])),
		DisabledCodes: int64(len(want[contract.StateDisabled])), ExpiredCodes: int64(len(want[contract.StateExpired])),
	}
	if p.Statistics == nil || *p.Statistics != wantStats {
		t.Errorf("statistics %+v, want %+v", p.Statistics, wantStats)
	}
}

// stateCase is one code of TestCodeStateDerivation with its expected state before and after
// the project's expiry.
type stateCase struct {
	value         string
	expiresAt     *int64
	verify        bool // verified through the API during setup
	disable       bool // disabled by the operator (after the verify, if any)
	before, after contract.State
}

// TestCodeStateDerivation checks the contract's precedence disabled > used > expired > unused,
// with a code's expiry falling back to its project's, on every combination: in the single-code
// answers (status, is_disabled, is_expired), in the list filter and in the statistics; then
// lets the project's expiry pass and checks that exactly the open codes without an expiry of
// their own turn expired, while the project's codes stay readable.
func TestCodeStateDerivation(t *testing.T) {
	s := testkit.NewStack(t)
	bases := s.StartAPIs(3)
	s.StartPipeline("relay-a")
	ctx := context.Background()

	// Warm the pipeline (the consumer's group join) so the timed part below is short.
	warm := s.NewTenant(nil, bases[0])
	s.ImportCodes(warm.ProjectID, nil, "WARM")
	r, _, err := warm.Clients[0].Verify(ctx, warm.ProjectID, contract.VerifyRequest{Code: "WARM"}, client.Options{})
	if err != nil || !r.Success {
		t.Fatalf("warm-up verify: %+v %v", r, err)
	}
	testkit.WaitFor(t, 30*time.Second, "warm-up log", func() (bool, string) { return s.LogCount(*r.CodeID) == 1, "no log yet" })

	now := time.Now().Unix()
	projectExp := now + 8
	past, future, atProject := now-60, now+3600, projectExp
	tn := s.NewTenant(&projectExp, bases...)
	U, D, X, E := contract.StateUnused, contract.StateUsed, contract.StateDisabled, contract.StateExpired
	cases := []stateCase{
		{"open-none-1", nil, false, false, U, E},
		{"open-none-2", nil, false, false, U, E},
		{"open-none-3", nil, false, false, U, E},
		{"open-future-1", &future, false, false, U, U},
		{"open-future-2", &future, false, false, U, U},
		{"open-past-1", &past, false, false, E, E},
		{"open-past-2", &past, false, false, E, E},
		{"open-past-3", &past, false, false, E, E},
		{"open-past-4", &past, false, false, E, E},
		{"used-none", nil, true, false, D, D},
		{"used-future", &future, true, false, D, D},
		{"used-own-expiry", &atProject, true, false, D, D}, // its own expiry passes too: still used
		{"disabled-none", nil, false, true, X, X},
		{"disabled-past", &past, false, true, X, X},
		{"disabled-future", &future, false, true, X, X},
		{"disabled-used", nil, true, true, X, X},
	}
	for _, c := range cases {
		s.ImportCodes(tn.ProjectID, c.expiresAt, c.value)
	}
	logs := 0
	verifiedAt := map[string]int64{}
	for _, c := range cases {
		if !c.verify {
			continue
		}
		by := "till-" + c.value
		r, _, err := tn.Clients[logs%len(tn.Clients)].Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: c.value, VerifiedBy: &by}, client.Options{})
		if err != nil || !r.Success || r.VerifiedAt == nil {
			t.Fatalf("verify %s: %+v %v", c.value, r, err)
		}
		verifiedAt[c.value] = *r.VerifiedAt
		logs++
	}
	for _, c := range cases {
		if c.disable {
			if err := s.Admin.SetCodeDisabled(ctx, tn.ProjectID, c.value, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The checks run in the contract's order: disabled before expired, expired reported last.
	for value, want := range map[string]contract.ErrorCode{
		"open-past-1": contract.CodeExpired, "disabled-past": contract.CodeDisabled, "disabled-used": contract.CodeDisabled, "used-future": contract.CodeAlreadyUsed,
	} {
		r, _, err := tn.Clients[0].Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: value}, client.Options{})
		if err != nil || r.Success || Deref(r.ErrorCode) != string(want) {
			t.Fatalf("verify %s: %+v %v; want %s", value, r, err, want)
		}
		logs++
	}
	s.WaitDrained(t, tn.ProjectID, logs, 30*time.Second)

	check := func(phase string, pick func(stateCase) contract.State) {
		t.Helper()
		want := map[contract.State][]string{}
		for _, c := range cases {
			st := pick(c)
			want[st] = append(want[st], c.value)
			for i, cl := range tn.Clients {
				code, err := cl.CodeByValue(ctx, tn.ProjectID, c.value)
				if err != nil {
					t.Fatalf("%s: replica %d: get %s: %v", phase, i, c.value, err)
				}
				vat, verified := verifiedAt[c.value]
				bad := code.Status != (st == D) || code.IsDisabled != (st == X) || code.IsExpired != (st == E) ||
					Show(code.ExpiresAt) != Show(c.expiresAt) || (code.VerifiedAt != nil) != verified ||
					(verified && *code.VerifiedAt != vat)
				if bad {
					t.Errorf("%s: replica %d: %s reads status=%v is_disabled=%v is_expired=%v expires_at=%s verified_at=%s; want state %s, expires_at %s",
						phase, i, c.value, code.Status, code.IsDisabled, code.IsExpired, Show(code.ExpiresAt),
						Show(code.VerifiedAt), st, Show(c.expiresAt))
				}
			}
		}
		checkStates(t, tn, want)
	}
	check("before the project's expiry", func(c stateCase) contract.State { return c.before })
	if time.Now().Unix() >= projectExp {
		t.Fatalf("setup and checks took until after the project's expiry; the checks above are void")
	}

	time.Sleep(time.Until(time.Unix(projectExp, 0)) + 50*time.Millisecond)
	check("after the project's expiry", func(c stateCase) contract.State { return c.after })
	p, err := tn.Clients[0].Project(ctx, tn.ProjectID)
	if err != nil || !p.Status || p.ExpiresAt == nil || *p.ExpiresAt != projectExp {
		t.Fatalf("expired project reads %+v, %v; want enabled with expires_at %d", p, err, projectExp)
	}
	// After the project's expiry the checks still run in the contract's order: a code without an
	// expiry of its own is in state expired and answers CODE_EXPIRED (after the use checks);
	// PROJECT_EXPIRED is left for a code whose own later expiry still holds.
	for _, c := range []struct {
		value              string
		verify, reactivate contract.ErrorCode
	}{
		{"open-none-1", contract.CodeExpired, contract.CodeAlreadyUnused},
		{"open-future-1", contract.ProjectExpired, contract.CodeAlreadyUnused},
		{"open-past-2", contract.CodeExpired, contract.CodeAlreadyUnused},
		{"used-none", contract.CodeAlreadyUsed, contract.CodeExpired},
		{"used-future", contract.CodeAlreadyUsed, contract.ProjectExpired},
		{"used-own-expiry", contract.CodeAlreadyUsed, contract.CodeExpired},
		{"disabled-future", contract.CodeDisabled, contract.CodeDisabled},
	} {
		r, _, err := tn.Clients[1].Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: c.value}, client.Options{})
		if err != nil || r.Success || Deref(r.ErrorCode) != string(c.verify) {
			t.Errorf("verify %s after the project's expiry: %+v %v; want %s", c.value, r, err, c.verify)
		}
		rr, _, err := tn.Clients[2].Reactivate(ctx, tn.ProjectID, contract.ReactivateRequest{Code: c.value}, client.Options{})
		if err != nil || rr.Success || Deref(rr.ErrorCode) != string(c.reactivate) {
			t.Errorf("reactivate %s after the project's expiry: %+v %v; want %s", c.value, rr, err, c.reactivate)
		}
	}
	code, err := tn.Clients[0].CodeByValue(ctx, tn.ProjectID, "open-future-1")
	if err != nil || code.Status || code.IsExpired {
		t.Errorf("open-future-1 after refused attempts: %+v %v", code, err)
	}
}
