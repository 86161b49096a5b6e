package telemetry_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"

	"github.com/acv/acv/internal/telemetry"
)

func TestLogWriterFlushesOnTimeAndClose(t *testing.T) {
	var out testkit.SyncBuffer
	w := telemetry.NewLogWriter(&out, 20*time.Millisecond)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = w.Write([]byte("line of one record\n"))
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(2 * time.Second)
	for strings.Count(out.String(), "\n") < 50 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := strings.Count(out.String(), "line of one record\n"); n != 50 {
		t.Fatalf("%d whole lines flushed by the timer, want 50", n)
	}
	_, _ = w.Write([]byte("last\n"))
	w.Close()
	if !strings.HasSuffix(out.String(), "last\n") {
		t.Fatal("Close did not flush")
	}
}
