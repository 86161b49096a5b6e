package localenv

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The fetch lock is exclusive across holders and waits until the holder lets go, or until
// the caller's context ends.
func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fetch.lock")
	unlock, err := lockFile(context.Background(), path, 0o644, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path, 0o644, time.Hour); err == nil {
		t.Fatal("took the lock while another holder had it")
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		unlock()
	}()
	start := time.Now()
	unlock2, err := lockFile(context.Background(), path, 0o644, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock2()
	if time.Since(start) < 100*time.Millisecond {
		t.Errorf("took the lock after %s, before the holder let go", time.Since(start))
	}
}

// A cache directory without the marker of a complete fetch is not used: a fetch that died half
// way is started over.
func TestCachedDistNeedsMarker(t *testing.T) {
	dir := t.TempDir()
	if _, err := cachedDist(dir, Kafka4); err == nil {
		t.Fatal("an empty directory passed for a complete fetch")
	}
}
