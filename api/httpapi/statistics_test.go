package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/acv/acv/api/contract"
)

func statsPath(pid string) string { return projectPath(pid) + "/statistics" }

// TestStatistics: GET /api/v1/projects/{project_id}/statistics answers the project's counts
// (the same as in the project body), usage_rate and the codes most recently used.
func TestStatistics(t *testing.T) {
	e := newEnv(t)
	by := "till-1"
	// Twelve used codes one second apart (U-11 newest), one used then disabled (not used any
	// more), one unused, and a used code of another project.
	for i := 0; i < 12; i++ {
		c := contract.CodeRecord{ID: contract.NewID(), ProjectID: projectA, Code: "U-" + string(rune('a'+i)), CreatedAt: now - 600,
			VerifiedAtMs: (now-100+int64(i))*1000 + 999}
		if i%2 == 0 {
			c.VerifiedBy = by
		}
		e.addCode(c)
	}
	e.addCode(contract.CodeRecord{ID: contract.NewID(), ProjectID: projectA, Code: "DIS", Disabled: true, VerifiedAtMs: now * 1000})
	e.addCode(contract.CodeRecord{ID: contract.NewID(), ProjectID: projectA, Code: "OPEN"})
	e.addCode(contract.CodeRecord{ID: contract.NewID(), ProjectID: projectB, Code: "B-USED", VerifiedAtMs: now * 1000})

	w := e.do(req{path: statsPath(projectA)})
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	wantHeader(t, w, "Content-Type", "application/json; charset=utf-8")
	wantRateHeaders(t, w, 0, 0, 0)
	// Every member, with the contract's names and types.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	wantMembers := []string{"project_id", "total_codes", "used_codes", "unused_codes", "disabled_codes", "expired_codes", "usage_rate", "recent_verifications"}
	for _, f := range wantMembers {
		if _, ok := m[f]; !ok {
			t.Errorf("member %q missing from %s", f, w.Body)
		}
	}
	if len(m) != len(wantMembers) {
		t.Errorf("members %v, want exactly %v", m, wantMembers)
	}
	// projectA's statistics in the fake: 10 codes, 3 used.
	for f, want := range map[string]string{"project_id": `"` + projectA + `"`, "total_codes": "10", "used_codes": "3",
		"unused_codes": "5", "disabled_codes": "1", "expired_codes": "1", "usage_rate": "0.3"} {
		if got := string(m[f]); got != want {
			t.Errorf("%s = %s, want %s", f, got, want)
		}
	}
	var body struct {
		Recent []map[string]json.RawMessage `json:"recent_verifications"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Recent) != 10 {
		t.Fatalf("%d recent verifications, want 10: %s", len(body.Recent), w.Body)
	}
	for i, r := range body.Recent {
		n := 11 - i
		wantCode, wantAt, wantBy := `"U-`+string(rune('a'+n))+`"`, jsonInt(now-100+int64(n)), "null"
		if n%2 == 0 {
			wantBy = `"till-1"`
		}
		if len(r) != 3 || string(r["code"]) != wantCode || string(r["verified_at"]) != wantAt || string(r["verified_by"]) != wantBy {
			t.Errorf("recent #%d = %v, want code %s verified_at %s verified_by %s", i, showRaw(r), wantCode, wantAt, wantBy)
		}
	}
	if calls := e.rec.Calls(); !slices.Contains(calls, "ProjectStatistics") {
		t.Errorf("records calls %v", calls)
	}
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }

func showRaw(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// TestStatisticsUsageRate: used ÷ total rounded to 4 decimals, 0 without codes, and an empty
// recent_verifications list (never null).
func TestStatisticsUsageRate(t *testing.T) {
	for _, c := range []struct {
		st   contract.Statistics
		want string
	}{
		{contract.Statistics{}, "0"},
		{contract.Statistics{TotalCodes: 3, UsedCodes: 1, UnusedCodes: 2}, "0.3333"},
		{contract.Statistics{TotalCodes: 3, UsedCodes: 2, UnusedCodes: 1}, "0.6667"},
		{contract.Statistics{TotalCodes: 7, UsedCodes: 7}, "1"},
		{contract.Statistics{TotalCodes: 20000, UsedCodes: 1, UnusedCodes: 19999}, "0.0001"},
		{contract.Statistics{TotalCodes: 30000, UsedCodes: 1, UnusedCodes: 29999}, "0"},
		{contract.Statistics{TotalCodes: 8, UsedCodes: 1, ExpiredCodes: 7}, "0.125"},
	} {
		e := newEnv(t)
		e.rec.stats[projectA] = c.st
		w := e.do(req{path: statsPath(projectA)})
		var m map[string]json.RawMessage
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &m) != nil {
			t.Fatalf("%+v: %d %s", c.st, w.Code, w.Body)
		}
		if got := string(m["usage_rate"]); got != c.want {
			t.Errorf("%+v: usage_rate %s, want %s", c.st, got, c.want)
		}
		if got := string(m["recent_verifications"]); got != "[]" {
			t.Errorf("%+v: recent_verifications %s, want []", c.st, got)
		}
		if got := string(m["total_codes"]); got != jsonInt(c.st.TotalCodes) {
			t.Errorf("total_codes %s, want %d", got, c.st.TotalCodes)
		}
	}
}

// TestStatisticsAuthentication: the same authentication as the other endpoints: 401 for a bad
// signature or a disabled project, 403 for another project's path, 404 for an unknown project;
// a refused request reads nothing.
func TestStatisticsAuthentication(t *testing.T) {
	e := newEnv(t)
	gone := "0190c0c0000070008000000000000c0c"
	keyGone := contract.APIKey{ID: "0190c0c0000070008000000000000009", ProjectID: gone, Secret: secretOf('g'), ProjectEnabled: true}
	e.rec.keys[keyGone.ID] = keyGone
	for _, c := range []struct {
		name    string
		r       req
		status  int
		mention string
	}{
		{"bad signature", req{path: statsPath(projectA), sig: contract.Sign("wrong", "x")}, 401, badCredentials},
		{"missing key", req{path: statsPath(projectA), drop: []string{"X-API-Key"}}, 401, "X-API-Key"},
		{"disabled project", req{path: statsPath(projectD), key: &keyDisabled}, 401, "disabled"},
		{"revoked key", req{path: statsPath(projectA), key: &keyRevoked}, 401, "revoked"},
		{"another project's path", req{path: statsPath(projectB)}, 403, "project"},
		{"unknown project", req{path: statsPath(gone), key: &keyGone}, 404, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.rec.reset()
			wantDetail(t, e.do(c.r), c.status, c.mention)
			for _, call := range e.rec.Calls() {
				// An unknown project is refused by the read itself; the others before it.
				if call == "ProjectStatistics" && c.status != http.StatusNotFound {
					t.Errorf("a refused request read the statistics: %v", e.rec.Calls())
				}
			}
		})
	}
	// With X-Nonce the statistics are replay-checked like every read.
	r := req{path: statsPath(projectA), nonce: newNonce()}
	if w := e.do(r); w.Code != http.StatusOK {
		t.Fatalf("first GET with a nonce: %d %s", w.Code, w.Body)
	}
	adm := e.hot.Calls("Admit")
	if len(adm) != 1 || !adm[0].Adm.CheckReplay || adm[0].Adm.ReplayKey != contract.ReplayIdentity("", r.nonce) {
		t.Errorf("admissions %+v", adm)
	}
	// A records failure is a 500/503, never a partial body.
	e.rec.err = contract.Unavailable(nil)
	if w := e.do(req{path: statsPath(projectA)}); w.Code != http.StatusServiceUnavailable {
		t.Errorf("records down: %d %s", w.Code, w.Body)
	}
}
