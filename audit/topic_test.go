package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"

	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/localenv"
)

// EnsureTopic creates a missing topic with its partitions and leaves an existing one alone,
// through the same requests the service sends at start (metadata for the controller and the
// brokers, CreateTopics), on each Kafka release.
func TestEnsureTopic(t *testing.T) {
	testkit.EachKafka(t, func(t *testing.T, k *localenv.Kafka) {
		seeded := testkit.KafkaTopic(t, k, 1)
		missing := seeded + ".ensured"
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for i := 0; i < 2; i++ {
			if err := audit.EnsureTopic(ctx, k.Brokers, missing, 6); err != nil {
				t.Fatalf("EnsureTopic (call %d): %v", i+1, err)
			}
		}
		if err := audit.EnsureTopic(ctx, k.Brokers, seeded, 3); err != nil {
			t.Fatalf("EnsureTopic on a seeded topic: %v", err)
		}
		conn, err := kafka.DialContext(ctx, "tcp", k.Brokers[0])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for topic, want := range map[string]int{missing: 6, seeded: 1} {
			parts, err := conn.ReadPartitions(topic)
			if err != nil {
				t.Fatalf("read partitions of %s: %v", topic, err)
			}
			if len(parts) != want {
				t.Errorf("topic %s has %d partitions, want %d", topic, len(parts), want)
			}
		}
	})
}
