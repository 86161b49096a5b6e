package service_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// TestContentionRedeemsOnceAcrossReplicas sends 2,000 concurrent verifies of one code through
// three API replicas sharing the stores: exactly one succeeds, every other one is told the code
// is used, and once the pipeline drains Postgres holds exactly one log per attempt.
func TestContentionRedeemsOnceAcrossReplicas(t *testing.T) {
	s := testkit.NewStack(t)
	bases := s.StartAPIs(3)
	s.StartPipeline("relay-a", "relay-b")
	tn := s.NewTenant(nil, bases...)
	s.ImportCodes(tn.ProjectID, nil, "HOT-CODE")

	const n = 2000
	type answer struct {
		r   contract.VerifyResponse
		err error
	}
	answers := make(chan answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		c := tn.Clients[i%len(tn.Clients)]
		by := fmt.Sprintf("till-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, _, err := c.Verify(context.Background(), tn.ProjectID, contract.VerifyRequest{Code: "HOT-CODE", VerifiedBy: &by}, client.Options{})
			answers <- answer{r, err}
		}()
	}
	close(start)
	wg.Wait()
	close(answers)
	wins, used := 0, 0
	var winner contract.VerifyResponse
	for a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("verify failed: %v", a.err)
		case a.r.Success:
			wins++
			winner = a.r
		case a.r.ErrorCode != nil && *a.r.ErrorCode == string(contract.CodeAlreadyUsed):
			used++
		default:
			t.Fatalf("unexpected answer %+v", a.r)
		}
	}
	if wins != 1 || used != n-1 {
		t.Fatalf("%d successes and %d CODE_ALREADY_USED, want 1 and %d", wins, used, n-1)
	}
	testkit.WaitFor(t, 60*time.Second, "all logs in postgres", func() (bool, string) {
		got := s.LogCount(*winner.CodeID)
		return got == n, fmt.Sprintf("%d of %d logs", got, n)
	})
	var ok, failed int
	if err := s.Deps.Store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE result = 'success'), count(*) FILTER (WHERE result = 'failed' AND reason = 'CODE_ALREADY_USED')
		 FROM verification_logs WHERE code_id = $1`, *winner.CodeID).Scan(&ok, &failed); err != nil {
		t.Fatal(err)
	}
	if ok != 1 || failed != n-1 {
		t.Fatalf("logs: %d success, %d failed; want 1 and %d", ok, failed, n-1)
	}
	code, err := tn.Clients[0].CodeByValue(context.Background(), tn.ProjectID, "HOT-CODE")
	if err != nil {
		t.Fatal(err)
	}
	if !code.Status || code.VerifiedAt == nil || *code.VerifiedAt != *winner.VerifiedAt {
		t.Fatalf("code after contention: %+v, winner %+v", code, winner)
	}
	testkit.WaitFor(t, 10*time.Second, "outbox drained", s.OutboxEmpty)
}
