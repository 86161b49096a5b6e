package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profile starts a CPU profile of p (its /debug/pprof/profile) lasting one measured phase,
// when the run was asked for profiles (-profile), and returns the wait for it: the profile is
// written to name.pprof in the profile directory. A failure is reported, never fatal: the
// profile is an aid, not a figure.
func (b *bench) profile(ctx context.Context, p *proc, name string) (wait func()) {
	if b.profileDir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.fetchProfile(ctx, p, name); err != nil {
			fmt.Fprintln(os.Stderr, "bench: profile", name+":", err)
		}
	}()
	return func() { <-done }
}

func (b *bench) fetchProfile(ctx context.Context, p *proc, name string) error {
	secs := int(b.dur / time.Second)
	if secs < 1 {
		secs = 1
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.debug, secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	if err := os.MkdirAll(b.profileDir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(b.profileDir, name+".pprof"))
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return nil
}
