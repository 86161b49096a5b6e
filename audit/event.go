package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/acv/acv/api/contract"
	gojson "github.com/goccy/go-json"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// Topic is the Kafka topic that carries verification-log events from the relay to the
// consumer; the relay's writer and the consumer's reader must agree on it.
const Topic = "acv.verification-logs"

// The forms of a Kafka message value the relay can publish (RelayConfig.Values,
// ACV_KAFKA_EVENT_FORMAT). The log writer of this version reads both; one of an earlier
// version reads only JSON, and skips (and logs) a value it cannot read, which loses that
// event's log row. An upgrade from such a version therefore publishes JSON until every log
// writer runs this version (docs/design.md, "Outbox event").
const (
	// ValuesEntry publishes the outbox entry as it is: the compact form (or the JSON of an
	// entry written before it). Encoding JSON in the relay and decoding it in the log writer
	// was a fifth of each one's CPU, and the JSON three times the entry's bytes.
	ValuesEntry = "entry"
	// ValuesJSON publishes the event's JSON, the form of earlier versions.
	ValuesJSON = "json"
)

// toMessage turns an outbox entry into a Kafka message: its value is the entry as it is, or
// the event's JSON when asJSON is set. The relay decodes the entry in any case, for its key
// and trace context, and to tell a malformed one apart: malformed is true when the entry does
// not decode or names neither a code id nor a value; it is then published as it is, without a
// key, and the log writer skips it (and logs it).
func toMessage(raw string, asJSON bool) (msg kafka.Message, malformed bool) {
	ev, traceParent, err := contract.DecodeOutboxEntry(raw)
	msg.Value = []byte(raw)
	if err != nil || (ev.CodeID == "" && ev.Code == "") {
		return msg, true
	}
	if asJSON && contract.IsCompact(msg.Value) {
		js, err := gojson.Marshal(ev)
		if err != nil {
			return msg, true
		}
		msg.Value = js
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
func legacyMessage(e redis.XMessage, asJSON bool) (msg kafka.Message, ok, malformed bool) {
	raw, found := e.Values[contract.EventField]
	if !found {
		return kafka.Message{}, false, true
	}
	msg, malformed = toMessage(fmt.Sprint(raw), asJSON) // go-redis hands stream values over as strings
	for _, field := range slices.Sorted(maps.Keys(e.Values)) {
		name, isHeader := strings.CutPrefix(field, contract.HeaderFieldPrefix)
		if !isHeader || name == "" {
			continue
		}
		msg.Headers = append(msg.Headers, kafka.Header{Key: name, Value: []byte(fmt.Sprint(e.Values[field]))})
	}
	return msg, true, malformed
}
