package admin_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
)

// A project change returns once every shard of the hot path holds the new state, stamped with
// the row's new version; a publish of an older version (a slow operator, a replica's load)
// changes no shard.
func TestProjectChangesReachEveryShard(t *testing.T) {
	a, rdb, pid := newAdmin(t)
	ctx := context.Background()
	copies := func() (enabled map[string]int, versions map[string]int) {
		t.Helper()
		enabled, versions = map[string]int{}, map[string]int{}
		for s := 0; s < cache.Shards; s++ {
			v, err := rdb.HMGet(ctx, cache.ShardPrefix(s)+"p:"+pid, "en", "n").Result()
			if err != nil {
				t.Fatal(err)
			}
			en, _ := v[0].(string)
			n, _ := v[1].(string)
			enabled[en]++
			versions[n]++
		}
		return enabled, versions
	}
	_, v1, err := a.Store.ProjectState(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	if en, n := copies(); en["1"] != cache.Shards || n[strconv.FormatInt(v1, 10)] != cache.Shards {
		t.Fatalf("after create: enabled %v, versions %v; want every shard enabled at version %d", en, n, v1)
	}
	if err := a.SetProjectEnabled(ctx, pid, false); err != nil {
		t.Fatal(err)
	}
	p, v2, err := a.Store.ProjectState(ctx, pid)
	if err != nil || p.Status || v2 != v1+1 {
		t.Fatalf("postgres after disable: %+v version %d, %v", p, v2, err)
	}
	if en, n := copies(); en["0"] != cache.Shards || n[strconv.FormatInt(v2, 10)] != cache.Shards {
		t.Fatalf("after disable: enabled %v, versions %v; want every shard disabled at version %d", en, n, v2)
	}
	if err := a.Cache.PublishProject(ctx, contract.Project{ID: pid, Status: true}, v1); err != nil {
		t.Fatal(err)
	}
	if en, _ := copies(); en["0"] != cache.Shards {
		t.Fatalf("an older version re-enabled shards: %v", en)
	}
	exp := int64(1_900_000_000)
	if err := a.SetProjectExpiry(ctx, pid, &exp); err != nil {
		t.Fatal(err)
	}
	if en, n := copies(); en["0"] != cache.Shards || n[strconv.FormatInt(v2+1, 10)] != cache.Shards {
		t.Fatalf("after the expiry change: enabled %v, versions %v; want version %d everywhere", en, n, v2+1)
	}
}
