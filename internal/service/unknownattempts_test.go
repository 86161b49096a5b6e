package service_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// TestUnknownCodeAttemptsReachTheLog: a verify or reactivate of a value no code has answers
// CODE_NOT_FOUND and leaves one verification log, through the whole pipeline, holding the
// value, the caller's IP and verified_by, and no code id; a retry with the same Idempotency-Key
// leaves none more.
func TestUnknownCodeAttemptsReachTheLog(t *testing.T) {
	s := testkit.NewStack(t)
	base := s.StartAPI()
	s.StartPipeline("relay")
	tn := s.NewTenant(nil)
	sg := s.Signer(t, base, tn.Key)

	for i, path := range []string{testkit.VerifyPath(tn.ProjectID), testkit.VerifyPath(tn.ProjectID), ReactivatePath(tn.ProjectID)} {
		var o Outcome
		sg.Post(path, map[string]any{"code": "NO-SUCH-CODE", "verified_by": "till-4", "reactivated_by": "till-4"}, nil).
			Decode(t, http.StatusOK, &o)
		if o.Success || o.ErrorCode == nil || *o.ErrorCode != string(contract.CodeNotFound) {
			t.Fatalf("attempt %d: %+v", i+1, o)
		}
	}
	idem := http.Header{"Idempotency-Key": {"unknown-retry-1"}}
	for i := 0; i < 2; i++ {
		sg.Post(testkit.VerifyPath(tn.ProjectID), map[string]any{"code": "NO-SUCH-OTHER"}, idem).Decode(t, http.StatusOK, &Outcome{})
	}

	count := func(value string) (int, string) {
		var n, withID int
		err := s.Deps.Store.Pool().QueryRow(context.Background(),
			`SELECT count(*), count(code_id) FROM verification_logs WHERE project_id = $1 AND code = $2
			   AND reason = 'CODE_NOT_FOUND' AND result = 'failed'`, tn.ProjectID, value).Scan(&n, &withID)
		if err != nil {
			t.Fatal(err)
		}
		return n, fmt.Sprintf("%d rows, %d with a code id", n, withID)
	}
	// Four logs in all (three attempts, one request sent twice), and nothing left to deliver.
	s.WaitDrained(t, tn.ProjectID, 4, 30*time.Second)
	if n, state := count("NO-SUCH-CODE"); n != 3 {
		t.Errorf("NO-SUCH-CODE: %s, want 3", state)
	}
	if n, state := count("NO-SUCH-OTHER"); n != 1 {
		t.Errorf("NO-SUCH-OTHER sent twice with one Idempotency-Key: %s, want 1", state)
	}
}
