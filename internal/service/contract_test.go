package service_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// This file holds the end-to-end tests of the wire contract (../../../shared/contract.md):
// every endpoint, outcome, error code and HTTP status, against a whole running stack. Requests
// are built and signed by hand (testkit.Signer), from the contract's text, so the tests prove
// the bytes an original SDK sends are accepted, independently of the api and client packages.

func TestContract(t *testing.T) {
	testkit.EachKafka(t, testContract)
}

// testContract is TestContract with the verification logs going through a real Kafka broker of
// one release (k), as in production.
func testContract(t *testing.T, k *localenv.Kafka) {
	s := testkit.NewStackWith(t, testkit.StackOptions{Kafka: k})
	base := s.StartAPI()
	s.StartPipeline("relay")
	ctx := context.Background()
	start := time.Now()
	past := start.Add(-time.Hour).Unix()
	future := start.Add(time.Hour).Unix()

	mustOK := func(sg *testkit.Signer, path string, body any) Outcome {
		t.Helper()
		var o Outcome
		sg.Post(path, body, nil).Decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("setup %s %v: %+v", path, body, o)
		}
		return o
	}
	// Tenant A: every outcome of verify and reactivate. Tenant S: statistics and the status
	// filter.
	a := s.NewTenant(nil)
	sa := s.Signer(t, base, a.Key)
	st := s.NewTenant(nil)
	ss := s.Signer(t, base, st.Key)

	// Codes that expire a few seconds from now are verified at once and checked at the end,
	// after their expiry passed, so the rest of the test runs while they age.
	soon := time.Now().Unix() + 3
	s.ImportCodes(a.ProjectID, &soon, "SOON-1")
	s.ImportCodes(st.ProjectID, &soon, "S-SOON", "S-SOONU")
	mustOK(sa, testkit.VerifyPath(a.ProjectID), map[string]any{"code": "SOON-1"})
	mustOK(ss, testkit.VerifyPath(st.ProjectID), map[string]any{"code": "S-SOON"})
	if time.Now().Unix() >= soon {
		t.Fatalf("setup took too long: the codes expiring at %d expired before being verified", soon)
	}

	s.ImportCodes(a.ProjectID, nil, "OK-1", "USED-1", "UNUSED-1", "DIS-1", "DISUSED-1", "REACT-1")
	s.ImportCodes(a.ProjectID, &past, "EXP-1", "EXPUNUSED")
	s.ImportCodes(st.ProjectID, nil, "S-U1", "S-U2", "S-U3", "S-V1", "S-V2", "S-R1", "S-D1", "S-DV")
	s.ImportCodes(st.ProjectID, &future, "S-F1")
	s.ImportCodes(st.ProjectID, &past, "S-E1", "S-E2", "S-EF")
	for _, v := range []string{"USED-1", "DISUSED-1", "REACT-1"} {
		mustOK(sa, testkit.VerifyPath(a.ProjectID), map[string]any{"code": v})
	}
	for _, v := range []string{"S-V1", "S-V2", "S-R1", "S-DV"} {
		mustOK(ss, testkit.VerifyPath(st.ProjectID), map[string]any{"code": v})
	}
	mustOK(ss, ReactivatePath(st.ProjectID), map[string]any{"code": "S-R1"})
	var o Outcome
	ss.Post(testkit.VerifyPath(st.ProjectID), map[string]any{"code": "S-EF"}, nil).Decode(t, http.StatusOK, &o)
	for _, d := range []struct{ p, v string }{{a.ProjectID, "DIS-1"}, {a.ProjectID, "DISUSED-1"}, {st.ProjectID, "S-D1"}, {st.ProjectID, "S-DV"}} {
		if err := s.Admin.SetCodeDisabled(ctx, d.p, d.v, true); err != nil {
			t.Fatal(err)
		}
	}

	// Tenant PD: a disabled project. Tenant PE: an expired one.
	pd := s.NewTenant(nil)
	spd := s.Signer(t, base, pd.Key)
	s.ImportCodes(pd.ProjectID, nil, "PD-1", "PD-DIS")
	if err := s.Admin.SetCodeDisabled(ctx, pd.ProjectID, "PD-DIS", true); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin.SetProjectEnabled(ctx, pd.ProjectID, false); err != nil {
		t.Fatal(err)
	}
	// Its used codes are verified before the project expires.
	pe := s.NewTenant(nil)
	spe := s.Signer(t, base, pe.Key)
	s.ImportCodes(pe.ProjectID, nil, "PE-1", "PE-2", "PE-USED")
	s.ImportCodes(pe.ProjectID, &future, "PE-OWN", "PE-OWNUSED")
	s.ImportCodes(pe.ProjectID, &past, "PE-OWNPAST")
	for _, v := range []string{"PE-USED", "PE-OWNUSED"} {
		mustOK(spe, testkit.VerifyPath(pe.ProjectID), map[string]any{"code": v})
	}
	if err := s.Admin.SetProjectExpiry(ctx, pe.ProjectID, &past); err != nil {
		t.Fatal(err)
	}

	t.Run("Outcomes", func(t *testing.T) {
		type row struct {
			name   string
			sg     *testkit.Signer
			proj   string
			action contract.Action
			body   map[string]any
			hdr    http.Header
			want   contract.ErrorCode // "" = success
		}
		verify, react := contract.ActionVerify, contract.ActionReactivate
		rows := []row{
			{"verify success", sa, a.ProjectID, verify, map[string]any{"code": "OK-1", "verified_by": "till-7"},
				http.Header{"X-Forwarded-For": {"203.0.113.9"}, "X-Real-Ip": {"203.0.113.9"}}, ""},
			{"verify used", sa, a.ProjectID, verify, map[string]any{"code": "USED-1"}, nil, contract.CodeAlreadyUsed},
			{"reactivate unused", sa, a.ProjectID, react, map[string]any{"code": "UNUSED-1"}, nil, contract.CodeAlreadyUnused},
			{"verify disabled", sa, a.ProjectID, verify, map[string]any{"code": "DIS-1"}, nil, contract.CodeDisabled},
			{"reactivate disabled", sa, a.ProjectID, react, map[string]any{"code": "DIS-1"}, nil, contract.CodeDisabled},
			{"verify disabled before used", sa, a.ProjectID, verify, map[string]any{"code": "DISUSED-1"}, nil, contract.CodeDisabled},
			{"reactivate disabled used code", sa, a.ProjectID, react, map[string]any{"code": "DISUSED-1"}, nil, contract.CodeDisabled},
			{"verify expired", sa, a.ProjectID, verify, map[string]any{"code": "EXP-1"}, nil, contract.CodeExpired},
			{"reactivate unused before expired", sa, a.ProjectID, react, map[string]any{"code": "EXPUNUSED"}, nil, contract.CodeAlreadyUnused},
			{"reactivate success", sa, a.ProjectID, react, map[string]any{"code": "REACT-1", "reactivated_by": "ops", "reason": "refund"}, nil, ""},
			{"verify unknown", sa, a.ProjectID, verify, map[string]any{"code": "NOPE"}, nil, contract.CodeNotFound},
			{"reactivate unknown", sa, a.ProjectID, react, map[string]any{"code": "NOPE"}, nil, contract.CodeNotFound},
			{"verify in disabled project", spd, pd.ProjectID, verify, map[string]any{"code": "PD-1"}, nil, contract.ProjectDisabled},
			{"reactivate in disabled project", spd, pd.ProjectID, react, map[string]any{"code": "PD-1"}, nil, contract.ProjectDisabled},
			{"project disabled before code disabled", spd, pd.ProjectID, verify, map[string]any{"code": "PD-DIS"}, nil, contract.ProjectDisabled},
			{"unknown before project disabled", spd, pd.ProjectID, verify, map[string]any{"code": "PD-NOPE"}, nil, contract.CodeNotFound},
			// A code of an expired project without its own expiry is in state expired: CODE_EXPIRED.
			{"verify in expired project", spe, pe.ProjectID, verify, map[string]any{"code": "PE-1"}, nil, contract.CodeExpired},
			{"reactivate unused in expired project", spe, pe.ProjectID, react, map[string]any{"code": "PE-1"}, nil, contract.CodeAlreadyUnused},
			{"reactivate used in expired project", spe, pe.ProjectID, react, map[string]any{"code": "PE-USED"}, nil, contract.CodeExpired},
			{"verify used in expired project", spe, pe.ProjectID, verify, map[string]any{"code": "PE-USED"}, nil, contract.CodeAlreadyUsed},
			// PROJECT_EXPIRED only while the code's own later expiry still holds.
			{"own later expiry in expired project", spe, pe.ProjectID, verify, map[string]any{"code": "PE-OWN"}, nil, contract.ProjectExpired},
			{"reactivate used with own later expiry in expired project", spe, pe.ProjectID, react, map[string]any{"code": "PE-OWNUSED"}, nil, contract.ProjectExpired},
			{"own expiry passed in expired project", spe, pe.ProjectID, verify, map[string]any{"code": "PE-OWNPAST"}, nil, contract.CodeExpired},
		}
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				path := testkit.VerifyPath(r.proj)
				if r.action == react {
					path = ReactivatePath(r.proj)
				}
				before := time.Now()
				resp := r.sg.With(t).Post(path, r.body, r.hdr)
				after := time.Now()
				checkOutcome(t, s, resp, r.proj, r.action, r.body["code"].(string), r.want, before, after)
			})
		}
		t.Run("state follows at once", func(t *testing.T) {
			c := sa.With(t).Code(a.ProjectID, "OK-1")
			if !c.Status || c.VerifiedBy == nil || *c.VerifiedBy != "till-7" || c.VerifiedAt == nil {
				t.Fatalf("OK-1 after verify: %+v", c)
			}
			c = sa.With(t).Code(a.ProjectID, "REACT-1")
			if c.Status || c.VerifiedAt != nil || c.VerifiedBy != nil {
				t.Fatalf("REACT-1 after reactivate: %+v", c)
			}
			c = sa.With(t).Code(a.ProjectID, "DISUSED-1")
			if c.Status || !c.IsDisabled || c.IsExpired {
				t.Fatalf("a disabled, once verified code shows %+v; want status false, is_disabled true", c)
			}
			c = sa.With(t).Code(a.ProjectID, "EXP-1")
			if c.Status || !c.IsExpired || c.ExpiresAt == nil || *c.ExpiresAt != past {
				t.Fatalf("an expired code shows %+v", c)
			}
		})
	})

	t.Run("VerificationLogs", func(t *testing.T) {
		type wantLog struct {
			result, action string
			by, reason     *string
		}
		verifyOK := wantLog{contract.ResultSuccess, "verify", nil, nil}
		failed := func(action string, code contract.ErrorCode) wantLog {
			return wantLog{contract.ResultFailed, action, nil, Ptr(string(code))}
		}
		cases := []struct {
			sg    *testkit.Signer
			proj  string
			value string
			logs  []wantLog // newest first
		}{
			{sa, a.ProjectID, "OK-1", []wantLog{{contract.ResultSuccess, "verify", Ptr("till-7"), nil}}},
			{sa, a.ProjectID, "USED-1", []wantLog{failed("verify", contract.CodeAlreadyUsed), verifyOK}},
			{sa, a.ProjectID, "REACT-1", []wantLog{{contract.ResultReactivated, "reactivate", Ptr("ops"), Ptr("refund")}, verifyOK}},
			{sa, a.ProjectID, "DIS-1", []wantLog{failed("reactivate", contract.CodeDisabled), failed("verify", contract.CodeDisabled)}},
			{sa, a.ProjectID, "UNUSED-1", []wantLog{failed("reactivate", contract.CodeAlreadyUnused)}},
			{sa, a.ProjectID, "EXP-1", []wantLog{failed("verify", contract.CodeExpired)}},
			{spd, pd.ProjectID, "PD-1", []wantLog{failed("reactivate", contract.ProjectDisabled), failed("verify", contract.ProjectDisabled)}},
			{spe, pe.ProjectID, "PE-1", []wantLog{failed("reactivate", contract.CodeAlreadyUnused), failed("verify", contract.CodeExpired)}},
			{spe, pe.ProjectID, "PE-OWN", []wantLog{failed("verify", contract.ProjectExpired)}},
		}
		for _, c := range cases {
			t.Run(c.value, func(t *testing.T) {
				id := s.CodeID(t, c.proj, c.value)
				s.WaitLogs(t, id, len(c.logs))
				var shown [][]contract.LogEntry
				if c.proj == pd.ProjectID {
					// A disabled project's codes cannot be read through the API (401).
					logs, err := s.Deps.Store.Logs(context.Background(), id, 0)
					if err != nil {
						t.Fatal(err)
					}
					shown = append(shown, logs)
				} else {
					var byID contract.Code
					c.sg.With(t).Get(testkit.ProjectPath(c.proj)+"/codes/"+id, "").Decode(t, http.StatusOK, &byID)
					shown = append(shown, c.sg.With(t).Code(c.proj, c.value).VerificationLogs, byID.VerificationLogs)
				}
				for _, got := range shown {
					if len(got) != len(c.logs) {
						t.Fatalf("%d logs shown, want %d: %+v", len(got), len(c.logs), got)
					}
					for i, w := range c.logs {
						g := got[i]
						if !contract.ValidID(g.ID) || g.Result != w.result || g.Action != w.action || g.IPAddress != "127.0.0.1" ||
							!EqualPtr(g.VerifiedBy, w.by) || !EqualPtr(g.Reason, w.reason) ||
							g.VerifiedAt < start.Unix() || g.VerifiedAt > time.Now().Unix() {
							t.Errorf("log %d: %+v (by %v, reason %v), want %+v (by %v, reason %v), ip 127.0.0.1, Unix seconds since %d",
								i, g, Show(g.VerifiedBy), Show(g.Reason), w, Show(w.by), Show(w.reason), start.Unix())
						}
					}
				}
			})
		}
	})

	t.Run("ProjectAndStatistics", func(t *testing.T) {
		var p contract.Project
		resp := ss.With(t).Get(testkit.ProjectPath(st.ProjectID), "")
		resp.Decode(t, http.StatusOK, &p)
		if p.ID != st.ProjectID || p.Name != "test" || !p.Status || p.ExpiresAt != nil ||
			p.CreatedAt < start.Unix()-1 || p.CreatedAt > time.Now().Unix() || p.Statistics == nil {
			t.Fatalf("project %s", resp.Body)
		}
		// The expired project stays readable, and counts its codes without an own expiry as expired.
		waitStats(t, spe, pe.ProjectID, contract.Statistics{TotalCodes: 6, UsedCodes: 2, UnusedCodes: 1, ExpiredCodes: 3})
		var pp contract.Project
		spe.With(t).Get(testkit.ProjectPath(pe.ProjectID), "").Decode(t, http.StatusOK, &pp)
		if !pp.Status || pp.ExpiresAt == nil || *pp.ExpiresAt != past {
			t.Fatalf("expired project: %+v; want status true (enabled), expires_at %d", pp, past)
		}
		if got := Values(spe.With(t).Page(pe.ProjectID, "status=expired").Items); !slices.Equal(got, Sorted("PE-1", "PE-2", "PE-OWNPAST")) {
			t.Fatalf("expired project, status=expired: %v", got)
		}
	})

	t.Run("List", func(t *testing.T) { testList(t, s, base) })
	t.Run("SingleCodeReads", func(t *testing.T) { testSingleReads(t, s, base) })
	t.Run("Authentication", func(t *testing.T) { testAuth(t, s, base, spd, pd) })
	t.Run("SignatureFormats", func(t *testing.T) { testSignatureFormats(t, s, base) })
	t.Run("RateLimit", func(t *testing.T) { testRateLimit(t, s, base) })
	t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, s, base) })

	// From here on the codes expiring at `soon` have expired.
	if d := time.Until(time.Unix(soon, 0)); d > 0 {
		time.Sleep(d)
	}

	t.Run("ExpiredAfterUse", func(t *testing.T) {
		before := time.Now()
		resp := sa.With(t).Post(testkit.VerifyPath(a.ProjectID), map[string]any{"code": "SOON-1"}, nil)
		checkOutcome(t, s, resp, a.ProjectID, contract.ActionVerify, "SOON-1", contract.CodeAlreadyUsed, before, time.Now())
		resp = sa.With(t).Post(ReactivatePath(a.ProjectID), map[string]any{"code": "SOON-1"}, nil)
		checkOutcome(t, s, resp, a.ProjectID, contract.ActionReactivate, "SOON-1", contract.CodeExpired, before, time.Now())
		resp = ss.With(t).Post(testkit.VerifyPath(st.ProjectID), map[string]any{"code": "S-SOONU"}, nil)
		checkOutcome(t, s, resp, st.ProjectID, contract.ActionVerify, "S-SOONU", contract.CodeExpired, before, time.Now())
		c := sa.With(t).Code(a.ProjectID, "SOON-1")
		if !c.Status || c.IsExpired {
			t.Fatalf("a used code past its expiry shows %+v; want status true, is_expired false", c)
		}
	})

	t.Run("StatisticsExact", func(t *testing.T) {
		want := contract.Statistics{TotalCodes: 14, UsedCodes: 3, UnusedCodes: 5, DisabledCodes: 2, ExpiredCodes: 4}
		waitStats(t, ss, st.ProjectID, want)
		for _, f := range []struct {
			status string
			want   []string
		}{
			{"used", Sorted("S-V1", "S-V2", "S-SOON")},
			{"unused", Sorted("S-U1", "S-U2", "S-U3", "S-F1", "S-R1")},
			{"disabled", Sorted("S-D1", "S-DV")},
			{"expired", Sorted("S-E1", "S-E2", "S-EF", "S-SOONU")},
		} {
			p := ss.With(t).Page(st.ProjectID, "status="+f.status)
			if got := Values(p.Items); !slices.Equal(got, f.want) || p.Total != int64(len(f.want)) || p.TotalPages != 1 {
				t.Errorf("status=%s: %v (total %d, pages %d), want %v", f.status, got, p.Total, p.TotalPages, f.want)
			}
			for _, c := range p.Items {
				if c.Status != (f.status == "used") || c.IsExpired != (f.status == "expired") || c.IsDisabled != (f.status == "disabled") {
					t.Errorf("status=%s lists %+v with fields of another state", f.status, c)
				}
			}
		}
	})

	t.Run("StatisticsEndpoint", func(t *testing.T) {
		// Tenant S: the same counts as the project body, usage_rate = round(3 / 14, 4), and its
		// three used codes newest first (S-DV was disabled, S-R1 reactivated: not used now).
		want := contract.Statistics{TotalCodes: 14, UsedCodes: 3, UnusedCodes: 5, DisabledCodes: 2, ExpiredCodes: 4}
		waitStats(t, ss, st.ProjectID, want)
		got := waitStatsEndpoint(t, ss, st.ProjectID, want, 3)
		if got.UsageRate != 0.2143 {
			t.Errorf("usage_rate %v, want 0.2143", got.UsageRate)
		}
		if v := recentValues(got); !slices.Equal(v, []string{"S-V2", "S-V1", "S-SOON"}) {
			t.Errorf("recent_verifications %v, want S-V2, S-V1, S-SOON", v)
		}
		for _, r := range got.RecentVerifications {
			c := ss.With(t).Code(st.ProjectID, r.Code)
			if c.VerifiedAt == nil || *c.VerifiedAt != r.VerifiedAt || r.VerifiedBy != nil {
				t.Errorf("recent %+v; the code reads verified_at %s", r, Show(c.VerifiedAt))
			}
		}

		// A fresh tenant: twelve codes verified in turn, the last by "till-9"; at most ten are
		// listed, newest first. No codes: usage_rate 0 and an empty list.
		tn := s.NewTenant(nil)
		sg := s.Signer(t, base, tn.Key)
		waitStatsEndpoint(t, sg, tn.ProjectID, contract.Statistics{}, 0)
		var values []string
		for i := 0; i < 12; i++ {
			values = append(values, fmt.Sprintf("ST-%02d", i))
		}
		s.ImportCodes(tn.ProjectID, nil, append(values, "ST-OPEN")...)
		for i, v := range values {
			body := map[string]any{"code": v}
			if i == 11 {
				body["verified_by"] = "till-9"
			}
			mustOK(sg, testkit.VerifyPath(tn.ProjectID), body)
		}
		got = waitStatsEndpoint(t, sg, tn.ProjectID, contract.Statistics{TotalCodes: 13, UsedCodes: 12, UnusedCodes: 1}, 10)
		if got.UsageRate != 0.9231 {
			t.Errorf("usage_rate %v, want 0.9231 (12 / 13)", got.UsageRate)
		}
		wantRecent := []string{"ST-11", "ST-10", "ST-09", "ST-08", "ST-07", "ST-06", "ST-05", "ST-04", "ST-03", "ST-02"}
		if v := recentValues(got); !slices.Equal(v, wantRecent) {
			t.Errorf("recent_verifications %v, want %v", v, wantRecent)
		}
		if r := got.RecentVerifications[0]; r.VerifiedBy == nil || *r.VerifiedBy != "till-9" || r.VerifiedAt < start.Unix() || r.VerifiedAt > time.Now().Unix() {
			t.Errorf("newest recent verification %+v (by %s)", r, Show(r.VerifiedBy))
		}

		// The same authentication as the other endpoints.
		WantDetail(t, ss.With(t).Get(testkit.ProjectPath(a.ProjectID)+"/statistics", ""), http.StatusForbidden, "project")
		WantDetail(t, spd.With(t).Get(testkit.ProjectPath(pd.ProjectID)+"/statistics", ""), http.StatusUnauthorized, "disabled")
		// An expired project stays readable.
		var pe2 contract.ProjectStatistics
		spe.With(t).Get(testkit.ProjectPath(pe.ProjectID)+"/statistics", "").Decode(t, http.StatusOK, &pe2)
		if pe2.ProjectID != pe.ProjectID || pe2.TotalCodes != 6 {
			t.Errorf("expired project's statistics %+v", pe2)
		}
	})

	t.Run("EveryAnsweredAttemptIsLogged", func(t *testing.T) {
		// Tenant A saw 4 setup verifies, 10 answered attempts on its codes in Outcomes, 2 in
		// ExpiredAfterUse, and 2 attempts on an unknown code, logged with the value they named.
		testkit.WaitFor(t, 30*time.Second, "tenant A's logs", func() (bool, string) {
			n := s.ProjectLogs(t, a.ProjectID)
			return n >= 18, fmt.Sprintf("%d of 18 logs", n)
		})
		testkit.WaitFor(t, 10*time.Second, "outbox drained", s.OutboxEmpty)
		if n := s.ProjectLogs(t, a.ProjectID); n != 18 {
			t.Fatalf("tenant A has %d logs, want 18", n)
		}
	})
}

// waitStats waits until the project's statistics are want: they may trail the pipeline.
func waitStats(t *testing.T, sg *testkit.Signer, projectID string, want contract.Statistics) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, "statistics", func() (bool, string) {
		var p contract.Project
		sg.With(t).Get(testkit.ProjectPath(projectID), "").Decode(t, http.StatusOK, &p)
		if p.Statistics == nil {
			return false, "no statistics"
		}
		got := *p.Statistics
		if got.TotalCodes != got.UsedCodes+got.UnusedCodes+got.DisabledCodes+got.ExpiredCodes {
			t.Fatalf("total_codes is not the sum of the four states: %+v", got)
		}
		return got == want, fmt.Sprintf("%+v, want %+v", got, want)
	})
}

// waitStatsEndpoint waits until GET .../statistics answers the counts want with n recent
// verifications (the statistics may trail the pipeline), checks every member is present, and
// returns the body.
func waitStatsEndpoint(t *testing.T, sg *testkit.Signer, projectID string, want contract.Statistics, n int) contract.ProjectStatistics {
	t.Helper()
	var got contract.ProjectStatistics
	testkit.WaitFor(t, 30*time.Second, "statistics endpoint", func() (bool, string) {
		resp := sg.With(t).Get(testkit.ProjectPath(projectID)+"/statistics", "")
		got = contract.ProjectStatistics{}
		resp.Decode(t, http.StatusOK, &got)
		m := resp.Fields(t)
		for _, f := range []string{"project_id", "total_codes", "used_codes", "unused_codes", "disabled_codes", "expired_codes", "usage_rate", "recent_verifications"} {
			if _, ok := m[f]; !ok {
				t.Fatalf("member %q missing from %s", f, resp.Body)
			}
		}
		if string(m["recent_verifications"]) == "null" {
			t.Fatalf("recent_verifications is null: %s", resp.Body)
		}
		if got.ProjectID != projectID {
			t.Fatalf("project_id %q, want %q", got.ProjectID, projectID)
		}
		if got.TotalCodes == 0 && got.UsageRate != 0 {
			t.Fatalf("usage_rate %v without codes", got.UsageRate)
		}
		return got.Statistics == want && len(got.RecentVerifications) == n,
			fmt.Sprintf("%+v with %d recent, want %+v with %d", got.Statistics, len(got.RecentVerifications), want, n)
	})
	for i := 1; i < len(got.RecentVerifications); i++ {
		if got.RecentVerifications[i].VerifiedAt > got.RecentVerifications[i-1].VerifiedAt {
			t.Errorf("recent_verifications not newest first: %+v", got.RecentVerifications)
		}
	}
	return got
}

func recentValues(st contract.ProjectStatistics) []string {
	var out []string
	for _, r := range st.RecentVerifications {
		out = append(out, r.Code)
	}
	return out
}

// checkOutcome checks a verify or reactivate answer: HTTP 200 whatever the outcome, every
// member present, code_id null exactly when the code was not found, Unix-seconds times.
func checkOutcome(t *testing.T, s *testkit.Stack, resp testkit.Response, projectID string, action contract.Action, value string, want contract.ErrorCode, before, after time.Time) {
	t.Helper()
	var o Outcome
	resp.Decode(t, http.StatusOK, &o)
	m := resp.Fields(t)
	timeField := "verified_at"
	if action == contract.ActionReactivate {
		timeField = "reactivated_at"
	}
	for _, f := range []string{"success", "code_id", "code", timeField, "message", "error_code"} {
		if _, ok := m[f]; !ok {
			t.Errorf("member %q missing from %s", f, resp.Body)
		}
	}
	if o.Code != value || o.Success != (want == "") || o.Message == "" {
		t.Errorf("answer %s for %q, want success=%v", resp.Body, value, want == "")
	}
	if want == "" {
		if string(m["error_code"]) != "null" {
			t.Errorf("error_code %s on success, want null", m["error_code"])
		}
	} else if o.ErrorCode == nil || *o.ErrorCode != string(want) {
		t.Errorf("error_code %s, want %s", m["error_code"], want)
	}
	if want == contract.CodeNotFound {
		if string(m["code_id"]) != "null" {
			t.Errorf("code_id %s for an unknown code, want null", m["code_id"])
		}
	} else if id := s.CodeID(t, projectID, value); o.CodeID == nil || *o.CodeID != id {
		t.Errorf("code_id %s, want %q", m["code_id"], id)
	}
	wantMsg := map[contract.ErrorCode]string{
		contract.CodeNotFound: "Code not found", contract.CodeAlreadyUsed: "Code has already been used",
		contract.CodeAlreadyUnused: "Code is already unused", contract.CodeExpired: "Code is expired",
		contract.CodeDisabled: "Code is disabled", contract.ProjectDisabled: "Project is disabled",
		contract.ProjectExpired: "Project is expired",
	}[want]
	switch {
	case want == "" && action == contract.ActionVerify:
		wantMsg = "Code verified successfully"
		inWindow(t, "verified_at", o.VerifiedAt, before, after)
	case want == "":
		wantMsg = "Code reactivated successfully"
		inWindow(t, "reactivated_at", o.ReactivatedAt, before, after)
	case action == contract.ActionReactivate && string(m["reactivated_at"]) != "null":
		t.Errorf("reactivated_at %s on a failed reactivate, want null", m["reactivated_at"])
	}
	if wantMsg != "" && o.Message != wantMsg {
		t.Errorf("message %q, want %q", o.Message, wantMsg)
	}
	WantSentence(t, o.Message)
}

// inWindow checks that a Unix-seconds timestamp lies within [from, to].
func inWindow(t *testing.T, what string, v *int64, from, to time.Time) {
	t.Helper()
	if v == nil {
		t.Fatalf("%s is null", what)
	}
	if *v < from.Unix() || *v > to.Unix() {
		t.Fatalf("%s = %d, want Unix seconds in [%d, %d]", what, *v, from.Unix(), to.Unix())
	}
}

func testList(t *testing.T, s *testkit.Stack, base string) {
	tn := s.NewTenant(nil)
	sg := s.Signer(t, base, tn.Key)
	var plain []string
	for i := 0; i < 25; i++ {
		plain = append(plain, fmt.Sprintf("L-%03d", i))
	}
	s.ImportCodes(tn.ProjectID, nil, plain...)
	s.ImportCodes(tn.ProjectID, nil, "Promo-ABC", "pRoMo-xyz", "50%OFF", "50XOFF", "A_B", "AXB", `C\D`)
	const total = 32

	t.Run("default paging", func(t *testing.T) {
		resp := sg.With(t).Get(testkit.ProjectPath(tn.ProjectID)+"/codes", "")
		var p contract.CodePage
		resp.Decode(t, http.StatusOK, &p)
		if len(p.Items) != 20 || p.Total != total || p.Page != 1 || p.PageSize != 20 || p.TotalPages != 2 {
			t.Fatalf("default page: %d items, total %d, page %d, page_size %d, total_pages %d",
				len(p.Items), p.Total, p.Page, p.PageSize, p.TotalPages)
		}
		var raw struct{ Items []map[string]json.RawMessage }
		resp.Decode(t, http.StatusOK, &raw)
		if _, ok := raw.Items[0]["verification_logs"]; ok {
			t.Errorf("list items carry verification_logs: %s", resp.Body)
		}
	})
	t.Run("pages in order", func(t *testing.T) {
		var ids []string
		for page := 1; page <= 5; page++ {
			p := sg.With(t).Page(tn.ProjectID, fmt.Sprintf("page=%d&page_size=7", page))
			wantLen := 7
			if page == 5 {
				wantLen = total - 28
			}
			if len(p.Items) != wantLen || p.Total != total || p.TotalPages != 5 || p.Page != page || p.PageSize != 7 {
				t.Fatalf("page %d of 7: %d items, total %d, pages %d", page, len(p.Items), p.Total, p.TotalPages)
			}
			for _, c := range p.Items {
				ids = append(ids, c.ID)
			}
		}
		// Newest first: created_at, then id, descending. Ids are time-ordered, so the whole
		// list is the ids in descending order, each once.
		want := slices.Clone(ids)
		slices.Sort(want)
		slices.Reverse(want)
		want = slices.Compact(want)
		if !slices.Equal(ids, want) || len(ids) != total {
			t.Fatalf("pages are not newest first without repeats: %v", ids)
		}
	})
	t.Run("past the end", func(t *testing.T) {
		for _, q := range []string{"page=3", "page=6&page_size=7", "page=1000&page_size=100"} {
			resp := sg.With(t).Get(testkit.ProjectPath(tn.ProjectID)+"/codes", q)
			var p contract.CodePage
			resp.Decode(t, http.StatusOK, &p)
			wantPages := int64(2)
			if strings.Contains(q, "page_size=7") {
				wantPages = 5
			} else if strings.Contains(q, "page_size=100") {
				wantPages = 1
			}
			if len(p.Items) != 0 || p.Total != total || p.TotalPages != wantPages || !bytes.Contains(resp.Body, []byte(`"items":[]`)) {
				t.Errorf("%s: %s; want empty items, total %d, total_pages %d", q, resp.Body, total, wantPages)
			}
		}
	})
	t.Run("search", func(t *testing.T) {
		for _, c := range []struct {
			search string
			want   []string
			extra  string
		}{
			{"promo", Sorted("Promo-ABC", "pRoMo-xyz"), ""},
			{"PROMO-abc", Sorted("Promo-ABC"), ""},
			{"%", Sorted("50%OFF"), ""},
			{"0%o", Sorted("50%OFF"), ""},
			{"_", Sorted("A_B"), ""},
			{"a_b", Sorted("A_B"), ""},
			{`\`, Sorted(`C\D`), ""},
			{"l-01", Sorted("L-010", "L-011", "L-012", "L-013", "L-014", "L-015", "L-016", "L-017", "L-018", "L-019"), ""},
			{"promo", Sorted("Promo-ABC", "pRoMo-xyz"), "&status=unused"},
			{"promo", nil, "&status=used"},
			{"zzz", nil, ""},
		} {
			q := "search=" + url.QueryEscape(c.search) + c.extra
			resp := sg.With(t).Get(testkit.ProjectPath(tn.ProjectID)+"/codes", q)
			var p contract.CodePage
			resp.Decode(t, http.StatusOK, &p)
			got := Values(p.Items)
			wantPages := int64(0)
			if len(c.want) > 0 {
				wantPages = 1
			}
			if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) ||
				p.Total != int64(len(c.want)) || p.TotalPages != wantPages {
				t.Errorf("%s: %v (total %d, total_pages %d), want %v", q, got, p.Total, p.TotalPages, c.want)
			}
			if len(c.want) == 0 && !bytes.Contains(resp.Body, []byte(`"items":[]`)) {
				t.Errorf("%s: items is not an empty array: %s", q, resp.Body)
			}
		}
		p := sg.With(t).Page(tn.ProjectID, "search=l-0&page_size=10&page=3")
		if p.Total != 25 || p.TotalPages != 3 || len(p.Items) != 5 {
			t.Errorf("search l-0, page 3 of 10: %d items, total %d, pages %d; want 5, 25, 3", len(p.Items), p.Total, p.TotalPages)
		}
	})
}

func testSingleReads(t *testing.T, s *testkit.Stack, base string) {
	tn := s.NewTenant(nil)
	other := s.NewTenant(nil)
	sg := s.Signer(t, base, tn.Key)
	values := []string{"A/B C", "50%off", "Ünï码-✓", "what?x=1&y", "A/B+C", "a+b", "hash#tag", "semi;colon", `back\slash`, "SHARED"}
	s.ImportCodes(tn.ProjectID, nil, values...)
	s.ImportCodes(other.ProjectID, nil, "SHARED", "ONLY-OTHER")
	otherID := s.CodeID(t, other.ProjectID, "SHARED")

	for _, v := range values {
		t.Run("by-code "+v, func(t *testing.T) {
			id := s.CodeID(t, tn.ProjectID, v)
			// Encoded as url.PathEscape does, and with every byte percent-encoded.
			var all strings.Builder
			for _, b := range []byte(v) {
				fmt.Fprintf(&all, "%%%02X", b)
			}
			for _, enc := range []string{url.PathEscape(v), all.String()} {
				resp := sg.With(t).Get(testkit.ProjectPath(tn.ProjectID)+"/codes/by-code/"+enc, "")
				var c contract.Code
				resp.Decode(t, http.StatusOK, &c)
				if c.ID != id || c.Code != v || c.Status || c.IsDisabled || c.IsExpired || c.VerifiedAt != nil {
					t.Fatalf("by-code/%s: %s; want code %q id %s, unused", enc, resp.Body, v, id)
				}
				if !bytes.Contains(resp.Body, []byte(`"verification_logs":[]`)) {
					t.Fatalf("by-code/%s: verification_logs is not an empty array: %s", enc, resp.Body)
				}
			}
			var c contract.Code
			sg.With(t).Get(testkit.ProjectPath(tn.ProjectID)+"/codes/"+id, "").Decode(t, http.StatusOK, &c)
			if c.ID != id || c.Code != v {
				t.Fatalf("by id %s: %+v", id, c)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		for _, c := range []struct{ name, path string }{
			{"unknown id", testkit.ProjectPath(tn.ProjectID) + "/codes/" + contract.NewID()},
			{"malformed id", testkit.ProjectPath(tn.ProjectID) + "/codes/xyz"},
			{"id of another project's code", testkit.ProjectPath(tn.ProjectID) + "/codes/" + otherID},
			{"unknown value", testkit.ByCodePath(tn.ProjectID, "NO-SUCH")},
			{"value only another project holds", testkit.ByCodePath(tn.ProjectID, "ONLY-OTHER")},
		} {
			t.Run(c.name, func(t *testing.T) { WantDetail(t, sg.With(t).Get(c.path, ""), http.StatusNotFound, "") })
		}
		if got := sg.With(t).Code(tn.ProjectID, "SHARED"); got.ID == otherID {
			t.Fatalf("by-code SHARED answered the other project's code")
		}
	})
	t.Run("unknown route", func(t *testing.T) {
		for _, p := range []string{"/api/v1/nothing", "/nothing", "/api/v2/projects/" + tn.ProjectID, testkit.ProjectPath(tn.ProjectID) + "/codes/by-code/x/y"} {
			WantDetail(t, sg.With(t).Get(p, ""), http.StatusNotFound, "")
		}
	})
}

func testAuth(t *testing.T, s *testkit.Stack, base string, spd *testkit.Signer, pd *testkit.Tenant) {
	tn := s.NewTenant(nil)
	sg := s.Signer(t, base, tn.Key)
	b := s.NewTenant(nil)
	s.ImportCodes(tn.ProjectID, nil, "AU-1", "AU-2", "AU-3", "AU-4", "AU-R")
	s.ImportCodes(b.ProjectID, nil, "B-1")
	proj := testkit.ProjectPath(tn.ProjectID)
	verifyBody := []byte(`{"code":"AU-1"}`)

	t.Run("missing or malformed headers", func(t *testing.T) {
		for _, h := range []string{"X-API-Key", "X-Timestamp", "X-Signature"} {
			for _, r := range []testkit.Request{
				{Method: http.MethodGet, Path: proj, Nonce: testkit.Nonce(), Omit: h},
				{Method: http.MethodPost, Path: testkit.VerifyPath(tn.ProjectID), Body: verifyBody, Nonce: testkit.Nonce(), Omit: h},
			} {
				WantDetail(t, sg.With(t).Send(r), http.StatusUnauthorized, h)
			}
		}
		for name, r := range map[string]testkit.Request{
			"non-numeric timestamp":  {Method: http.MethodGet, Path: proj, Header: http.Header{"X-Timestamp": {"yesterday"}}},
			"nonce of 15 characters": {Method: http.MethodGet, Path: proj, Nonce: strings.Repeat("n", 15)},
			"nonce of 65 characters": {Method: http.MethodGet, Path: proj, Nonce: strings.Repeat("n", 65)},
			"nonce with a dot":       {Method: http.MethodGet, Path: proj, Nonce: "abcdefghijklmnop.q"},
		} {
			t.Run(name, func(t *testing.T) { WantDetail(t, sg.With(t).Send(r), http.StatusUnauthorized, "") })
		}
	})
	// An unknown key id, a malformed one and a bad signature of a key that exists get the same
	// answer to the byte, so the answers do not tell which key ids exist. The answer goes on to
	// show the string to sign the server built from the request, never a secret or a MAC.
	const badCredentials = "Invalid API key or signature"
	t.Run("unknown key and bad signature look alike", func(t *testing.T) {
		// One timestamp for the three, as the detail shows it.
		ts := time.Now().Unix()
		good := sg.Build(testkit.Request{Method: http.MethodGet, Path: proj, TS: ts})
		sig := []byte(good.Header.Get("X-Signature"))
		sig[0] ^= 1
		var first testkit.Response
		for i, r := range []testkit.Request{
			{Method: http.MethodGet, Path: proj, TS: ts, Header: http.Header{"X-Api-Key": {contract.NewID()}}},
			{Method: http.MethodGet, Path: proj, TS: ts, Header: http.Header{"X-Api-Key": {"not-a-key"}}},
			{Method: http.MethodGet, Path: proj, TS: ts, Sig: string(sig)},
		} {
			resp := sg.With(t).Send(r)
			d := WantDetail(t, resp, http.StatusUnauthorized, "")
			if want := badCredentials + ": X-Signature must be the lowercase hex HMAC-SHA256, keyed with the API secret, of \"GET\\n" + proj + "\\n"; !strings.HasPrefix(d, want) {
				t.Errorf("request %d: detail %q, want it to start %q", i, d, want)
			}
			if strings.Contains(d, sg.Secret) || strings.Contains(d, good.Header.Get("X-Signature")) || strings.Contains(d, string(sig)) {
				t.Errorf("request %d: detail %q shows a secret or a signature", i, d)
			}
			if i == 0 {
				first = resp
			} else if !bytes.Equal(resp.Body, first.Body) {
				t.Errorf("request %d: body %s differs from the unknown key's %s", i, resp.Body, first.Body)
			}
		}
	})
	t.Run("nonce bounds accepted", func(t *testing.T) {
		for _, n := range []string{"Ab0_-" + testkit.Nonce()[:11], testkit.Nonce() + testkit.Nonce()} {
			if r := sg.With(t).Send(testkit.Request{Method: http.MethodGet, Path: proj, Nonce: n}); r.Status != http.StatusOK {
				t.Errorf("X-Nonce of %d characters: %d %s", len(n), r.Status, r.Body)
			}
		}
	})
	t.Run("bad signature", func(t *testing.T) {
		good := sg.Build(testkit.Request{Method: http.MethodGet, Path: proj})
		sig := []byte(good.Header.Get("X-Signature"))
		sig[0] ^= 1
		for name, r := range map[string]testkit.Request{
			"flipped":                  {Method: http.MethodGet, Path: proj, Sig: string(sig)},
			"lower-case method signed": {Method: http.MethodGet, Path: proj, Sig: testkit.Sign(sg.Secret, testkit.StringToSign("get", proj, "", nil, strconv.FormatInt(time.Now().Unix(), 10), ""))},
			"other secret":             {Method: http.MethodGet, Path: proj, Sig: testkit.Sign(strings.Repeat("0", 64), testkit.StringToSign("GET", proj, "", nil, strconv.FormatInt(time.Now().Unix(), 10), ""))},
			"nonce not signed":         {Method: http.MethodGet, Path: proj, Header: http.Header{"X-Nonce": {testkit.Nonce()}}},
			"query not signed":         {Method: http.MethodGet, Path: proj + "/codes", Query: "page=2", SignQuery: Ptr("")},
			"body of another code":     {Method: http.MethodPost, Path: testkit.VerifyPath(tn.ProjectID), Body: verifyBody, Sig: testkit.Sign(sg.Secret, testkit.StringToSign("POST", testkit.VerifyPath(tn.ProjectID), "", []byte(`{"code":"AU-2"}`), strconv.FormatInt(time.Now().Unix(), 10), ""))},
		} {
			t.Run(name, func(t *testing.T) { WantDetail(t, sg.With(t).Send(r), http.StatusUnauthorized, badCredentials) })
		}
		if c := sg.With(t).Code(tn.ProjectID, "AU-1"); c.Status {
			t.Fatalf("a verify refused for its signature redeemed the code")
		}
	})
	t.Run("timestamp window", func(t *testing.T) {
		now := time.Now().Unix()
		// Past the 300 s window by more than a loaded machine's request takes, so the answer does
		// not depend on how long the request was in flight.
		for _, skew := range []int64{-330, 330, -3600} {
			r := sg.With(t).Send(testkit.Request{Method: http.MethodGet, Path: proj, Nonce: testkit.Nonce(), TS: now + skew})
			d := WantDetail(t, r, http.StatusUnauthorized, "server time")
			ok := false
			for _, f := range strings.FieldsFunc(d, func(r rune) bool { return r < '0' || r > '9' }) {
				if v, err := strconv.ParseInt(f, 10, 64); err == nil && v >= now-5 && v <= time.Now().Unix()+5 {
					ok = true
				}
			}
			if !ok {
				t.Errorf("skew %d s: detail %q does not name the server time (about %d)", skew, d, now)
			}
		}
		for _, skew := range []int64{-290, 290} {
			r := sg.With(t).Send(testkit.Request{Method: http.MethodGet, Path: proj, Nonce: testkit.Nonce(), TS: now + skew})
			if r.Status != http.StatusOK {
				t.Errorf("skew %d s: %d %s, want 200", skew, r.Status, r.Body)
			}
		}
	})
	t.Run("replayed POST", func(t *testing.T) {
		for name, nonce := range map[string]string{"with nonce": testkit.Nonce(), "without nonce": ""} {
			t.Run(name, func(t *testing.T) {
				value := "AU-3"
				if nonce == "" {
					value = "AU-4"
				}
				r := testkit.Request{Method: http.MethodPost, Path: ReactivatePath(tn.ProjectID), Body: []byte(`{"code":"` + value + `"}`),
					Nonce: nonce, TS: time.Now().Unix()}
				var o Outcome
				sg.With(t).Send(r).Decode(t, http.StatusOK, &o) // CODE_ALREADY_UNUSED, logged
				d := WantDetail(t, sg.With(t).Send(r), http.StatusUnauthorized, "")
				want := "Request replayed"
				if nonce == "" {
					// The signature is the replay identity: the detail says how to repeat a request.
					want = "Request replayed: to repeat a request within 300 seconds, send each one with its own X-Nonce"
				}
				if d != want {
					t.Errorf("detail %q, want %q", d, want)
				}
				// The replay wrote nothing: a later attempt is the code's second log, not third.
				sg.With(t).Post(testkit.VerifyPath(tn.ProjectID), map[string]any{"code": value}, nil).Decode(t, http.StatusOK, &o)
				if !o.Success {
					t.Fatalf("verify after the replay: %+v", o)
				}
				s.WaitLogs(t, s.CodeID(t, tn.ProjectID, value), 2)
			})
		}
	})
	t.Run("GET replay", func(t *testing.T) {
		r := testkit.Request{Method: http.MethodGet, Path: proj, Nonce: testkit.Nonce(), TS: time.Now().Unix()}
		if got := sg.With(t).Send(r); got.Status != http.StatusOK {
			t.Fatalf("first GET: %d %s", got.Status, got.Body)
		}
		if d := WantDetail(t, sg.With(t).Send(r), http.StatusUnauthorized, ""); d != "Request replayed" {
			t.Errorf("detail %q, want \"Request replayed\"", d)
		}
		// The replay key is the nonce: the same nonce on another path is a replay too.
		r.Path = proj + "/codes"
		WantDetail(t, sg.With(t).Send(r), http.StatusUnauthorized, "replayed")
		// Without a nonce, old SDKs may send the same GET twice within a second.
		r = testkit.Request{Method: http.MethodGet, Path: proj, TS: time.Now().Unix()}
		for i := 0; i < 2; i++ {
			if got := sg.With(t).Send(r); got.Status != http.StatusOK {
				t.Fatalf("identical GET without nonce #%d: %d %s", i+1, got.Status, got.Body)
			}
		}
	})
	t.Run("another project", func(t *testing.T) {
		for _, r := range []testkit.Request{
			{Method: http.MethodGet, Path: testkit.ProjectPath(b.ProjectID), Nonce: testkit.Nonce()},
			{Method: http.MethodGet, Path: testkit.ByCodePath(b.ProjectID, "B-1"), Nonce: testkit.Nonce()},
			{Method: http.MethodPost, Path: testkit.VerifyPath(b.ProjectID), Body: []byte(`{"code":"B-1"}`), Nonce: testkit.Nonce()},
		} {
			WantDetail(t, sg.With(t).Send(r), http.StatusForbidden, "")
			r.Nonce, r.Sig = testkit.Nonce(), strings.Repeat("0", 64)
			WantDetail(t, sg.With(t).Send(r), http.StatusUnauthorized, "")
		}
		if c := s.Signer(t, base, b.Key).Code(b.ProjectID, "B-1"); c.Status {
			t.Fatalf("a verify on another project's path redeemed its code")
		}
	})
	t.Run("revoked key", func(t *testing.T) {
		k, err := s.Admin.CreateAPIKey(context.Background(), tn.ProjectID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		sk := s.Signer(t, base, k)
		if r := sk.Get(proj, ""); r.Status != http.StatusOK {
			t.Fatalf("fresh key: %d %s", r.Status, r.Body)
		}
		if err := s.Admin.RevokeAPIKey(context.Background(), k.ID); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 3*time.Second, "revocation to take effect", func() (bool, string) {
			r := sk.Get(proj, "")
			return r.Status == http.StatusUnauthorized, fmt.Sprintf("%d %s", r.Status, r.Body)
		})
		WantDetail(t, sk.Get(proj, ""), http.StatusUnauthorized, "revoked")
		WantDetail(t, sk.Post(testkit.VerifyPath(tn.ProjectID), map[string]any{"code": "AU-R"}, nil), http.StatusUnauthorized, "")
		if c := sg.With(t).Code(tn.ProjectID, "AU-R"); c.Status {
			t.Fatalf("a revoked key redeemed a code")
		}
	})
	t.Run("disabled project", func(t *testing.T) {
		spd := spd.With(t)
		id := s.CodeID(t, pd.ProjectID, "PD-1")
		for _, p := range []string{testkit.ProjectPath(pd.ProjectID), testkit.ProjectPath(pd.ProjectID) + "/codes", testkit.ByCodePath(pd.ProjectID, "PD-1"), testkit.ProjectPath(pd.ProjectID) + "/codes/" + id} {
			WantDetail(t, spd.Get(p, ""), http.StatusUnauthorized, "disabled")
		}
	})
}

func testSignatureFormats(t *testing.T, s *testkit.Stack, base string) {
	tn := s.NewTenant(nil)
	sg := s.Signer(t, base, tn.Key)
	s.ImportCodes(tn.ProjectID, nil, "A/B C", "XA%B1", "AXB1", "a b/c-1", "AB/C", "ab c")
	proj := testkit.ProjectPath(tn.ProjectID)

	t.Run("encoded path", func(t *testing.T) {
		path := proj + "/codes/by-code/A%2FB%20C"
		for _, nonce := range []string{"", testkit.Nonce()} {
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			sts := "GET\n" + path + "\n\n" + contract.EmptyBodySHA256 + "\n" + ts
			if nonce != "" {
				sts += "\n" + nonce
			}
			req := sg.Build(testkit.Request{Method: http.MethodGet, Path: path, Nonce: nonce, Sig: testkit.Sign(sg.Secret, sts),
				Header: http.Header{"X-Timestamp": {ts}}})
			var c contract.Code
			testkit.Do(t, sg.HTTP, req).Decode(t, http.StatusOK, &c)
			if c.Code != "A/B C" {
				t.Fatalf("by-code A%%2FB%%20C answered %q", c.Code)
			}
		}
		// The original server signed the percent-decoded path: accepted too (contract).
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		sts := "GET\n" + proj + "/codes/by-code/A/B C\n\n" + contract.EmptyBodySHA256 + "\n" + ts
		req := sg.Build(testkit.Request{Method: http.MethodGet, Path: path, Sig: testkit.Sign(sg.Secret, sts), Header: http.Header{"X-Timestamp": {ts}}})
		var c contract.Code
		testkit.Do(t, sg.HTTP, req).Decode(t, http.StatusOK, &c)
		if c.Code != "A/B C" {
			t.Fatalf("decoded path signed: answered %q", c.Code)
		}
		// Another spelling of the path is neither the path as sent nor the decoded one.
		sts = "GET\n" + proj + "/codes/by-code/A%2fB%20C\n\n" + contract.EmptyBodySHA256 + "\n" + ts
		req = sg.Build(testkit.Request{Method: http.MethodGet, Path: path, Sig: testkit.Sign(sg.Secret, sts), Header: http.Header{"X-Timestamp": {ts}}})
		WantDetail(t, testkit.Do(t, sg.HTTP, req), http.StatusUnauthorized, "")
	})
	t.Run("each SDK's query encoding", func(t *testing.T) {
		// Searches holding what the encodings treat differently, signed as each SDK signs and
		// sent as it sends; the answer is the code the search names. Encoders written by hand:
		// Python's quote_plus (space '+', only _.-~ bare) and JavaScript's encodeURIComponent
		// (space %20, -_.!~*'() bare).
		esc := func(s, keep string, plus bool) string {
			var b strings.Builder
			for _, c := range []byte(s) {
				switch {
				case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte(keep, c) >= 0:
					b.WriteByte(c)
				case c == ' ' && plus:
					b.WriteByte('+')
				default:
					fmt.Fprintf(&b, "%%%02X", c)
				}
			}
			return b.String()
		}
		py := func(s string) string { return esc(s, "_.-~", true) }
		js := func(s string) string { return esc(s, "-_.!~*'()", false) }
		s.ImportCodes(tn.ProjectID, nil, "SDK it's (new)*! 100% + é&=", "SDK other")
		const search = "it's (new)*! 100% + é&="
		path := proj + "/codes"
		for _, f := range []struct{ name, sent, signed string }{
			{"python", "search=" + py(search) + "&page=1", "page=1&search=" + py(search)},
			{"typescript", "search=" + strings.ReplaceAll(js(search), "'", "%27") + "&page=1", "page=1&search=" + js(search)},
			{"as sent", "search=" + js(search) + "&page=1", "page=1&search=" + js(search)},
			{"original server", "search=" + js(search) + "&page=1", "page=1&search=" + py(search)},
		} {
			for _, nonce := range []string{"", testkit.Nonce()} {
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				sts := "GET\n" + path + "\n" + f.signed + "\n" + contract.EmptyBodySHA256 + "\n" + ts
				if nonce != "" {
					sts += "\n" + nonce
				}
				req := sg.Build(testkit.Request{Method: http.MethodGet, Path: path, Query: f.sent, Nonce: nonce, Sig: testkit.Sign(sg.Secret, sts),
					Header: http.Header{"X-Timestamp": {ts}}})
				var p contract.CodePage
				testkit.Do(t, sg.HTTP, req).Decode(t, http.StatusOK, &p)
				if got := Values(p.Items); !slices.Equal(got, []string{"SDK it's (new)*! 100% + é&="}) {
					t.Errorf("%s (nonce %q): sent %q, found %v", f.name, nonce, f.sent, got)
				}
				if nonce != "" {
					// The same signed request in another encoding is the same request: a replay.
					req = sg.Build(testkit.Request{Method: http.MethodGet, Path: path, Query: "page=1&search=" + py(search), Nonce: nonce,
						Sig: testkit.Sign(sg.Secret, sts), Header: http.Header{"X-Timestamp": {ts}}})
					WantDetail(t, testkit.Do(t, sg.HTTP, req), http.StatusUnauthorized, "replayed")
				}
			}
		}
	})
	t.Run("repeated and encoded query keys", func(t *testing.T) {
		const query = "status=unused&search=a%25b&page=1&page_size=5&search=x"
		const sorted = "page=1&page_size=5&search=a%25b&search=x&status=unused"
		resp := sg.With(t).Send(testkit.Request{Method: http.MethodGet, Path: proj + "/codes", Query: query, Nonce: testkit.Nonce(), SignQuery: Ptr(sorted)})
		var p contract.CodePage
		resp.Decode(t, http.StatusOK, &p)
		if got := Values(p.Items); !slices.Equal(got, []string{"XA%B1"}) || p.Total != 1 || p.PageSize != 5 {
			t.Fatalf("search a%%b: %s", resp.Body)
		}
		for name, q := range map[string]string{
			"decoded":  "page=1&page_size=5&search=a%b&search=x&status=unused",
			"unsorted": query,
		} {
			r := sg.With(t).Send(testkit.Request{Method: http.MethodGet, Path: proj + "/codes", Query: query, Nonce: testkit.Nonce(), SignQuery: Ptr(q)})
			if r.Status != http.StatusUnauthorized {
				t.Errorf("query signed %s: %d, want 401", name, r.Status)
			}
		}
	})
	t.Run("python SDK", func(t *testing.T) {
		// requests builds the query with urllib.parse.urlencode (quote_plus: a space is '+',
		// '/' is %2F) in the order of the params dict, and the original SDK signs five lines:
		// no X-Nonce, the query pairs sorted.
		const sent = "status=unused&search=a+b%2Fc&page=1"
		const signed = "page=1&search=a+b%2Fc&status=unused"
		path := proj + "/codes"
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		sts := "GET\n" + path + "\n" + signed + "\n" + contract.EmptyBodySHA256 + "\n" + ts
		req := sg.Build(testkit.Request{Method: http.MethodGet, Path: path, Query: sent, Sig: testkit.Sign(sg.Secret, sts), Header: http.Header{"X-Timestamp": {ts}}})
		var p contract.CodePage
		testkit.Do(t, sg.HTTP, req).Decode(t, http.StatusOK, &p)
		if got := Values(p.Items); !slices.Equal(got, []string{"a b/c-1"}) {
			t.Fatalf("search \"a b/c\" sent as a+b%%2Fc: %v", got)
		}
		// And a POST as json.dumps writes it: ", " and ": " separators.
		body := []byte(`{"code": "ab c", "verified_by": "py-sdk"}`)
		sum := sha256.Sum256(body)
		vpath := testkit.VerifyPath(tn.ProjectID)
		sts = "POST\n" + vpath + "\n\n" + hex.EncodeToString(sum[:]) + "\n" + ts
		req = sg.Build(testkit.Request{Method: http.MethodPost, Path: vpath, Body: body, Sig: testkit.Sign(sg.Secret, sts), Header: http.Header{"X-Timestamp": {ts}}})
		var o Outcome
		testkit.Do(t, sg.HTTP, req).Decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("python-style verify: %+v", o)
		}
	})
}

func testRateLimit(t *testing.T, s *testkit.Stack, base string) {
	tn := s.NewTenant(nil)
	s.ImportCodes(tn.ProjectID, nil, "RL-1", "RL-2")
	ctx := context.Background()
	proj := testkit.ProjectPath(tn.ProjectID)

	wantHeaders := func(t *testing.T, r testkit.Response, limit, remaining string) {
		t.Helper()
		for h, want := range map[string]string{"X-RateLimit-Limit": limit, "X-RateLimit-Remaining": remaining, "X-RateLimit-Reset": ""} {
			got := r.Header.Get(h)
			if _, err := strconv.Atoi(got); err != nil || (want != "" && got != want) {
				t.Errorf("%s: %q, want %q", h, got, want)
			}
		}
	}
	t.Run("unlimited key", func(t *testing.T) {
		sg := s.Signer(t, base, tn.Key)
		wantHeaders(t, sg.Get(proj, ""), "", "")
		wantHeaders(t, sg.Post(testkit.VerifyPath(tn.ProjectID), map[string]any{"code": "NOPE"}, nil), "", "")
	})
	t.Run("GET", func(t *testing.T) {
		k, err := s.Admin.CreateAPIKey(ctx, tn.ProjectID, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		sg := s.Signer(t, base, k)
		r := sg.Get(proj, "")
		if r.Status != http.StatusOK {
			t.Fatalf("first: %d %s", r.Status, r.Body)
		}
		wantHeaders(t, r, "2", "1")
		r = sg.Get(proj+"/codes", "")
		if r.Status != http.StatusOK {
			t.Fatalf("second: %d %s", r.Status, r.Body)
		}
		wantHeaders(t, r, "2", "0")
		third := testkit.Request{Method: http.MethodGet, Path: proj, Nonce: testkit.Nonce(), TS: time.Now().Unix()}
		r = sg.Send(third)
		WantDetail(t, r, http.StatusTooManyRequests, "")
		wantHeaders(t, r, "2", "0")
		after, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || after < 1 || after > 2 {
			t.Fatalf("Retry-After %q, want whole seconds, 1 or 2", r.Header.Get("Retry-After"))
		}
		// A refused request used up neither a token nor its nonce: sent unchanged after
		// Retry-After, it is answered.
		time.Sleep(time.Duration(after) * time.Second)
		if r := sg.Send(third); r.Status != http.StatusOK {
			t.Fatalf("the same request after Retry-After: %d %s", r.Status, r.Body)
		}
	})
	t.Run("verify", func(t *testing.T) {
		k, err := s.Admin.CreateAPIKey(ctx, tn.ProjectID, 0.5, 1)
		if err != nil {
			t.Fatal(err)
		}
		sg := s.Signer(t, base, k)
		var o Outcome
		r := sg.Post(testkit.VerifyPath(tn.ProjectID), map[string]any{"code": "RL-1"}, nil)
		r.Decode(t, http.StatusOK, &o)
		wantHeaders(t, r, "1", "0")
		r = sg.Post(testkit.VerifyPath(tn.ProjectID), map[string]any{"code": "RL-2"}, nil)
		WantDetail(t, r, http.StatusTooManyRequests, "")
		if after, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || after < 1 || after > 2 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		wantHeaders(t, r, "1", "0")
		if c := s.Signer(t, base, tn.Key).Code(tn.ProjectID, "RL-2"); c.Status {
			t.Fatalf("a rate-limited verify redeemed the code")
		}
	})
}

func testIdempotency(t *testing.T, s *testkit.Stack, base string) {
	tn := s.NewTenant(nil)
	sg := s.Signer(t, base, tn.Key)
	s.ImportCodes(tn.ProjectID, nil, "IDEM-1", "IDEM-2", "IDEM-3")
	vpath, rpath := testkit.VerifyPath(tn.ProjectID), ReactivatePath(tn.ProjectID)
	idem := func(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }

	t.Run("retry replays the first answer", func(t *testing.T) {
		sg := sg.With(t)
		body := map[string]any{"code": "IDEM-1", "verified_by": "checkout"}
		first := sg.Post(vpath, body, idem("order-1"))
		var o Outcome
		first.Decode(t, http.StatusOK, &o)
		if !o.Success || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %s (Idempotent-Replayed %q)", first.Body, first.Header.Get("Idempotent-Replayed"))
		}
		time.Sleep(1100 * time.Millisecond) // a retry in a later second must still show the first verified_at
		again := sg.Post(vpath, body, idem("order-1"))
		if again.Status != http.StatusOK || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d %s (Idempotent-Replayed %q); want 200 %s with Idempotent-Replayed: true",
				again.Status, again.Body, again.Header.Get("Idempotent-Replayed"), first.Body)
		}
		WantDetail(t, sg.Post(vpath, map[string]any{"code": "IDEM-1", "verified_by": "someone else"}, idem("order-1")), http.StatusConflict, "")
		WantDetail(t, sg.Post(rpath, body, idem("order-1")), http.StatusConflict, "")
		// One log for the first verify; none for the replay or the conflicts. A plain attempt
		// afterwards is the second.
		sg.Post(vpath, map[string]any{"code": "IDEM-1"}, nil).Decode(t, http.StatusOK, &o)
		if o.Success || o.ErrorCode == nil || *o.ErrorCode != string(contract.CodeAlreadyUsed) {
			t.Fatalf("plain verify after: %+v", o)
		}
		id := s.CodeID(t, tn.ProjectID, "IDEM-1")
		s.WaitLogs(t, id, 2)
		var results []string
		if err := s.Deps.Store.Pool().QueryRow(context.Background(),
			`SELECT array_agg(result ORDER BY verified_at) FROM verification_logs WHERE code_id = $1`, id).Scan(&results); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(results, []string{contract.ResultSuccess, contract.ResultFailed}) {
			t.Fatalf("logs of IDEM-1: %v", results)
		}
	})
	t.Run("retry changes nothing", func(t *testing.T) {
		sg := sg.With(t)
		body := map[string]any{"code": "IDEM-2"}
		var o Outcome
		first := sg.Post(vpath, body, idem("order-2"))
		first.Decode(t, http.StatusOK, &o)
		sg.Post(rpath, body, nil).Decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("reactivate: %+v", o)
		}
		again := sg.Post(vpath, body, idem("order-2"))
		if !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after a reactivation: %s, want the stored %s", again.Body, first.Body)
		}
		if c := sg.With(t).Code(tn.ProjectID, "IDEM-2"); c.Status {
			t.Fatalf("a replayed verify redeemed the code again")
		}
	})
	t.Run("invalid key", func(t *testing.T) {
		sg := sg.With(t)
		for name, k := range map[string]string{
			"256 characters": strings.Repeat("k", 256),
			"non-ASCII":      "clé-1",
			"empty":          "",
			"control":        "a\tb",
		} {
			t.Run(name, func(t *testing.T) {
				WantDetail(t, sg.With(t).Post(vpath, map[string]any{"code": "IDEM-3"}, idem(k)), http.StatusBadRequest, "Idempotency-Key")
			})
		}
		if c := sg.With(t).Code(tn.ProjectID, "IDEM-3"); c.Status {
			t.Fatalf("a refused verify redeemed the code")
		}
		var o Outcome
		sg.Post(vpath, map[string]any{"code": "IDEM-3"}, idem(strings.Repeat("k", 255))).Decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("a 255-character Idempotency-Key: %+v", o)
		}
		s.WaitLogs(t, s.CodeID(t, tn.ProjectID, "IDEM-3"), 1)
	})
}
