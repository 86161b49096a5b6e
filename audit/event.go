package audit

import (
	"encoding/json"
	"fmt"
	"github.com/acv/acv/api/contract"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// Topic is the Kafka topic that carries verification-log events from the relay to the
// consumer; the relay's writer and the consumer's reader must agree on it.
const Topic = "acv.verification-logs"

// RelayGroup is the consumer group every relay replica joins on each outbox stream, so replicas
// share the work and an entry delivered to a replica that died can be claimed by another.
const RelayGroup = "relay"

// toMessage turns an outbox entry into a Kafka message whose value is the event's JSON. ok is
// false when the entry holds no event field at all (nothing to publish). malformed is true when
// the event does not decode or names no code id: it is published as it is, without a key, and
// the consumer skips it. An entry of the compact form (contract.DecodeOutboxEntry) carries its
// trace context inside; an entry written as JSON carries it in header fields.
func toMessage(e redis.XMessage) (msg kafka.Message, ok, malformed bool) {
	raw, found := e.Values[contract.EventField]
	if !found {
		return kafka.Message{}, false, true
	}
	s := fmt.Sprint(raw) // go-redis hands stream values over as strings
	ev, traceParent, err := contract.DecodeOutboxEntry(s)
	switch {
	case err != nil || ev.CodeID == "":
		malformed = true
		msg.Value = []byte(s)
	case s[0] == '{':
		msg.Value = []byte(s)
	default:
		if msg.Value, err = json.Marshal(ev); err != nil {
			return kafka.Message{Value: []byte(s)}, true, true
		}
	}
	if !malformed {
		// The code id is the Kafka key: every event of one code lands in one partition, in order.
		msg.Key = []byte(ev.CodeID)
	}
	if traceParent != "" {
		msg.Headers = append(msg.Headers, kafka.Header{Key: "traceparent", Value: []byte(traceParent)})
	}
	for _, field := range slices.Sorted(maps.Keys(e.Values)) {
		name, isHeader := strings.CutPrefix(field, contract.HeaderFieldPrefix)
		if !isHeader || name == "" {
			continue
		}
		msg.Headers = append(msg.Headers, kafka.Header{Key: name, Value: []byte(fmt.Sprint(e.Values[field]))})
	}
	return msg, true, malformed
}
