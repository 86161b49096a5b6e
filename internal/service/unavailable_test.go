package service_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// TestRedisLoadingAnswers503: while Redis reloads its dataset (as after a restart with a large
// append-only file) it answers LOADING; verify, reactivate and a code read are then 503 with
// the contract's sentence, never 500 and never Redis's text, the cause is logged, nothing is
// redeemed, and once Redis has loaded the same code verifies.
func TestRedisLoadingAnswers503(t *testing.T) {
	s := testkit.NewStack(t)
	// The key lookup stays cached through the reload, so only the hot path meets LOADING.
	s.Config.KeyCacheTTL = time.Minute
	base := s.StartAPI()
	tn := s.NewTenant(nil)
	s.ImportCodes(tn.ProjectID, nil, "LOAD-1")
	sg := s.Signer(t, base, tn.Key)
	if r := sg.Get(testkit.ProjectPath(tn.ProjectID), ""); r.Status != http.StatusOK {
		t.Fatalf("project before the reload: %d %s", r.Status, r.Body)
	}

	done := testkit.LoadRedis(t, s.Redis.Addr, 3*time.Second)
	for name, send := range map[string]func() testkit.Response{
		"verify": func() testkit.Response {
			return sg.Post(testkit.VerifyPath(tn.ProjectID), map[string]string{"code": "LOAD-1"}, nil)
		},
		"reactivate": func() testkit.Response {
			return sg.Post(ReactivatePath(tn.ProjectID), map[string]string{"code": "LOAD-1"}, nil)
		},
		"code by value": func() testkit.Response { return sg.Get(testkit.ByCodePath(tn.ProjectID, "LOAD-1"), "") },
	} {
		r := send()
		if d := WantDetail(t, r, http.StatusServiceUnavailable, ""); d != "Service temporarily unavailable" {
			t.Errorf("%s while redis loads: detail %q", name, d)
		}
		if ra := r.Header.Get("Retry-After"); ra != "1" {
			t.Errorf("%s while redis loads: Retry-After %q, want 1", name, ra)
		}
		if bytes.Contains(bytes.ToUpper(r.Body), []byte("LOADING")) {
			t.Errorf("%s: the answer shows redis's error: %s", name, r.Body)
		}
	}
	done()

	logged := false
	for _, l := range s.Logs.Lines() {
		logged = logged || strings.Contains(l, "LOADING")
	}
	if !logged {
		t.Error("the LOADING cause of the 503s is not logged")
	}
	if c := sg.Code(tn.ProjectID, "LOAD-1"); c.Status {
		t.Fatal("a verify answered 503 redeemed the code")
	}
	var out Outcome
	sg.Post(testkit.VerifyPath(tn.ProjectID), map[string]string{"code": "LOAD-1"}, nil).Decode(t, http.StatusOK, &out)
	if !out.Success {
		t.Fatalf("verify after the reload: %+v", out)
	}
}
