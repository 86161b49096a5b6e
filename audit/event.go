package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/acv/acv/api/contract"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// Topic is the Kafka topic that carries verification-log events from the relay to the
// consumer; the relay's writer and the consumer's reader must agree on it.
const Topic = "acv.verification-logs"

// toMessage turns an outbox entry into a Kafka message whose value is the entry as it is: the
// compact form (contract.DecodeOutboxEntry), or the event's JSON of an entry written before it.
// The relay decodes the entry only for its key and trace context and to refuse a malformed one;
// it no longer writes JSON (encoding it here and decoding it in the consumer was a fifth of
// each one's CPU, and the JSON three times the bytes). malformed is true when the entry does
// not decode or names neither a code id nor a value: it is published as it is, without a key,
// and the consumer skips it.
func toMessage(raw string) (msg kafka.Message, malformed bool) {
	ev, traceParent, err := contract.DecodeOutboxEntry(raw)
	msg.Value = []byte(raw)
	if err != nil || (ev.CodeID == "" && ev.Code == "") {
		return msg, true
	}
	// The code id is the Kafka key: every event of one code lands in one partition, in order.
	// An attempt on a value no code has is keyed by project and value.
	msg.Key = []byte(ev.CodeID)
	if ev.CodeID == "" {
		msg.Key = []byte(ev.ProjectID + ":" + ev.Code)
	}
	if traceParent != "" {
		msg.Headers = append(msg.Headers, kafka.Header{Key: "traceparent", Value: []byte(traceParent)})
	}
	return msg, false
}

// legacyMessage is toMessage for an entry of the previous outbox format, a stream entry whose
// EventField holds the event (compact or JSON) and whose header fields carry the trace context
// of a JSON one. ok is false when the entry holds no event field at all (nothing to publish).
func legacyMessage(e redis.XMessage) (msg kafka.Message, ok, malformed bool) {
	raw, found := e.Values[contract.EventField]
	if !found {
		return kafka.Message{}, false, true
	}
	msg, malformed = toMessage(fmt.Sprint(raw)) // go-redis hands stream values over as strings
	for _, field := range slices.Sorted(maps.Keys(e.Values)) {
		name, isHeader := strings.CutPrefix(field, contract.HeaderFieldPrefix)
		if !isHeader || name == "" {
			continue
		}
		msg.Headers = append(msg.Headers, kafka.Header{Key: name, Value: []byte(fmt.Sprint(e.Values[field]))})
	}
	return msg, true, malformed
}
