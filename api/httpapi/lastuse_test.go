package httpapi_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/httpapi"
)

// flushes records what KeyUses flushes; fail makes the next flush fail.
type flushes struct {
	mu      sync.Mutex
	batches []map[string]time.Time
	fail    bool
}

func (f *flushes) TouchAPIKeys(_ context.Context, ids []string, at []time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		f.fail = false
		return errors.New("postgres down")
	}
	b := map[string]time.Time{}
	for i, id := range ids {
		if i > 0 && ids[i-1] >= id {
			return errors.New("ids not sorted")
		}
		b[id] = at[i]
	}
	f.batches = append(f.batches, b)
	return nil
}

// TestKeyUsesFlush: one flush carries each key once with its newest use, an empty interval
// flushes nothing, and a failed flush keeps its uses for the next one.
func TestKeyUsesFlush(t *testing.T) {
	sink := &flushes{}
	k := httpapi.NewKeyUses(sink, nil)
	t0 := time.Unix(1_800_000_000, 0)
	k.Used("bb", t0)
	k.Used("aa", t0.Add(2*time.Second))
	k.Used("bb", t0.Add(5*time.Second))
	k.Used("bb", t0.Add(time.Second)) // an older use arriving late
	ctx := context.Background()
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.batches) != 1 || len(sink.batches[0]) != 2 || !sink.batches[0]["bb"].Equal(t0.Add(5*time.Second)) {
		t.Fatalf("batches %v", sink.batches)
	}
	sink.fail = true
	k.Used("cc", t0)
	if err := k.Flush(ctx); err == nil {
		t.Fatal("the failed flush reported no error")
	}
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.batches) != 2 || !sink.batches[1]["cc"].Equal(t0) {
		t.Fatalf("the failed flush's use was lost: %v", sink.batches)
	}
}

// TestKeyUsesConcurrent: uses noted from hundreds of goroutines while flushes run are never
// lost: across all flushes, each key's newest time is the newest use noted.
func TestKeyUsesConcurrent(t *testing.T) {
	sink := &flushes{}
	k := httpapi.NewKeyUses(sink, nil)
	t0 := time.Unix(1_800_000_000, 0)
	keys := []string{"k1", "k2", "k3", "k4"}
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				_ = k.Flush(context.Background())
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 200; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				k.Used(keys[(g+i)%len(keys)], t0.Add(time.Duration(g*200+i)*time.Millisecond))
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-flushed
	if err := k.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	newest := map[string]time.Time{}
	for _, b := range sink.batches {
		for id, at := range b {
			if at.After(newest[id]) {
				newest[id] = at
			}
		}
	}
	for j, id := range keys {
		// The last goroutine's last uses: g = 199, i from 196 to 199, key (g+i) % 4.
		var want time.Time
		for i := 0; i < 200; i++ {
			if (199+i)%len(keys) == j {
				want = t0.Add(time.Duration(199*200+i) * time.Millisecond)
			}
		}
		if !newest[id].Equal(want) {
			t.Errorf("key %s: newest flushed %v, want %v", id, newest[id], want)
		}
	}
}
