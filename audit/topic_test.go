package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"

	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/audit"
)

// EnsureTopic creates a missing topic with its partitions and leaves an existing one alone.
func TestEnsureTopic(t *testing.T) {
	k := testkit.KafkaBroker(t, "seed", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 2; i++ {
		if err := audit.EnsureTopic(ctx, k.Brokers, audit.Topic, 6); err != nil {
			t.Fatalf("EnsureTopic (call %d): %v", i+1, err)
		}
	}
	if err := audit.EnsureTopic(ctx, k.Brokers, "seed", 3); err != nil {
		t.Fatalf("EnsureTopic on a seeded topic: %v", err)
	}
	conn, err := kafka.DialContext(ctx, "tcp", k.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for topic, want := range map[string]int{audit.Topic: 6, "seed": 1} {
		parts, err := conn.ReadPartitions(topic)
		if err != nil {
			t.Fatalf("read partitions of %s: %v", topic, err)
		}
		if len(parts) != want {
			t.Errorf("topic %s has %d partitions, want %d", topic, len(parts), want)
		}
	}
}
