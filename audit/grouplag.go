package audit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// GroupLag returns, per partition of topic, how many messages the consumer group has not
// committed yet: the high watermark minus the committed offset (all of it when none is).
// It asks the brokers, so it is right for the whole group whichever member is scraped.
func GroupLag(ctx context.Context, brokers []string, topic, group string) (map[int]int64, error) {
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("kafka metadata: %w", err)
	}
	var parts []int
	for _, t := range md.Topics {
		if t.Name == topic {
			for _, p := range t.Partitions {
				parts = append(parts, p.ID)
			}
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	reqs := make([]kafka.OffsetRequest, len(parts))
	for i, p := range parts {
		reqs[i] = kafka.LastOffsetOf(p)
	}
	offs, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("kafka list offsets: %w", err)
	}
	committed, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return nil, fmt.Errorf("kafka offset fetch: %w", err)
	}
	done := map[int]int64{}
	for _, p := range committed.Topics[topic] {
		done[p.Partition] = p.CommittedOffset
	}
	lag := make(map[int]int64, len(parts))
	for _, p := range offs.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("kafka offsets of partition %d: %w", p.Partition, p.Error)
		}
		c := done[p.Partition]
		if c < 0 {
			c = 0
		}
		lag[p.Partition] = max(0, p.LastOffset-c)
	}
	return lag, nil
}

var lagDesc = prometheus.NewDesc("acv_consumer_lag_messages",
	"Messages of the log topic the consumer group has not committed, per partition.", []string{"partition"}, nil)

// LagCollector reports GroupLag at scrape time.
type LagCollector struct {
	Brokers      []string
	Topic, Group string
}

// Describe implements prometheus.Collector.
func (l *LagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc }

// Collect implements prometheus.Collector; an unreachable broker yields no series, which the
// pipeline alerts see as absent.
func (l *LagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	lag, err := GroupLag(ctx, l.Brokers, l.Topic, l.Group)
	if err != nil {
		return
	}
	for p, n := range lag {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(n), strconv.Itoa(p))
	}
}
