package console_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

// TestConsoleAuditRetention: the scheduled retention removes the rows past it, the rest of
// the chain still verifies, the removal is recorded once however many console processes run
// it at the same moment, and a run with nothing to remove records nothing.
func TestConsoleAuditRetention(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, name := range []string{"old one", "old two"} {
		if _, err := e.svc.CreateProject(ctx, console.SystemActor("test"), contract.NewProject{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Add(10 * 24 * time.Hour)
	if _, err := e.svc.CreateProject(ctx, console.SystemActor("test"), contract.NewProject{Name: "recent"}); err != nil {
		t.Fatal(err)
	}
	// Three console processes apply a 5-day retention at once.
	svcs := []*console.Service{e.svc}
	for i := 0; i < 2; i++ {
		s, _ := e.build(console.ServerConfig{})
		svcs = append(svcs, s)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
	)
	for _, s := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := s.ApplyAuditRetention(ctx, 5*24*time.Hour)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 2 {
		t.Fatalf("removed %d rows, want the 2 old ones", total)
	}
	rows, err := e.store.AdminAudit(ctx, contract.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Action != "audit.retention" || rows[0].AdminUsername != "console:retention" ||
		rows[1].Action != "project.create" {
		t.Fatalf("rows after retention: %+v", rows)
	}
	rep, err := e.svc.VerifyChain(ctx)
	if err != nil || !rep.OK || rep.Rows != 2 {
		t.Fatalf("chain after retention %+v, %v", rep, err)
	}
	// Nothing more to remove: no new row.
	if n, err := e.svc.ApplyAuditRetention(ctx, 5*24*time.Hour); err != nil || n != 0 {
		t.Fatalf("second run removed %d, %v", n, err)
	}
	if rows, _ := e.store.AdminAudit(ctx, contract.AuditFilter{}); len(rows) != 2 {
		t.Fatalf("a run that removed nothing was recorded: %+v", rows)
	}
	// The scheduled loop runs at once and stops with its context.
	e.clock.Add(6 * 24 * time.Hour)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.svc.RunAuditRetention(rctx, 5*24*time.Hour, time.Hour) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, _ := e.store.AdminAudit(ctx, contract.AuditFilter{})
		if len(rows) == 1 && rows[0].Action == "audit.retention" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduled run did not prune: %+v", rows)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
