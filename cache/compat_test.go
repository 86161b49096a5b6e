package cache

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
)

// projectLoader is a Loader that knows one project.
type projectLoader struct {
	p     contract.Project
	loads int
}

func (l *projectLoader) CodeByValue(context.Context, string, string) (contract.CodeRecord, error) {
	return contract.CodeRecord{}, contract.ErrNotFound
}

func (l *projectLoader) ProjectState(context.Context, string) (contract.Project, int64, error) {
	l.loads++
	return l.p, 1, nil
}

func (l *projectLoader) APIKey(context.Context, string) (contract.APIKey, error) {
	return contract.APIKey{}, contract.ErrNotFound
}

// A project copy written before the one-field state is loaded again, not misread.
func TestProjectCopyOfThePreviousFormat(t *testing.T) {
	r, err := localenv.StartRedis(t.TempDir(), localenv.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop(5 * time.Second) })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	pid := contract.NewID()
	loader := &projectLoader{p: contract.Project{ID: pid, Status: true}}
	c := New(rdb, WithLoader(loader))
	codeID := contract.NewID()
	if _, err := c.PutCode(ctx, pid, contract.CodeRecord{ID: codeID, ProjectID: pid, Code: "OLD"}); err != nil {
		t.Fatal(err)
	}
	shard := ShardOf(pid, "OLD")
	// A project copy as the previous putproject.lua wrote it: enabled, without F_PSTATE.
	if err := rdb.HSet(ctx, projectKey(shard, pid), fEnabled, "1", fVersion, "1").Err(); err != nil {
		t.Fatal(err)
	}
	op := contract.Operation{Action: contract.ActionVerify, ProjectID: pid, KeyID: "k1", Code: "OLD", IP: "127.0.0.1",
		ReplayKey: contract.NewID(), EventID: contract.NewID(), Now: time.Unix(1_800_000_000, 0)}
	res, _, err := c.applyLoading(ctx, shard, op)
	if err != nil || !res.Outcome.Success() || res.Outcome.CodeID != codeID {
		t.Fatalf("verify: %+v, %v", res, err)
	}
	if loader.loads != 1 {
		t.Fatalf("the project copy without its one-field state was loaded %d times, want 1", loader.loads)
	}
}
