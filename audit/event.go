package audit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/acv/acv/api/contract"
	"github.com/segmentio/kafka-go"
)

// Topic is the Kafka topic that carries verification-log events from the relay to the
// consumer; the relay's writer and the consumer's reader must agree on it.
const Topic = "acv.verification-logs"

// toMessage turns an outbox entry into a Kafka message whose value is the entry as it is,
// keyed by code and carrying the trace context. malformed is true when the entry does not
// decode or names neither a code id nor a value: it is published without a key, and the log
// writer skips it.
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

// errNotEvent is a message that decodes but holds no event PostgreSQL could store (an id
// missing or malformed).
var errNotEvent = errors.New("no event: an event, project or code id is missing or malformed")

// decodeEvent reads a message value as an event PostgreSQL can hold, or refuses it, so the log
// writer skips it rather than offer a batch that can never commit: ids well-formed (uuid
// columns), and U+FFFD for invalid UTF-8 and NUL in its texts.
func decodeEvent(value []byte) (contract.Event, error) {
	ev, _, err := contract.DecodeOutboxEntry(string(value))
	if err != nil {
		return contract.Event{}, fmt.Errorf("decode event: %w", err)
	}
	if !ev.WellFormedIDs() {
		return contract.Event{}, errNotEvent
	}
	ev.Action = contract.Action(pgText(string(ev.Action)))
	for _, s := range []*string{&ev.Result, &ev.Reason, &ev.VerifiedBy, &ev.IP, &ev.Code, &ev.StateBy} {
		*s = pgText(*s)
	}
	return ev, nil
}

// pgText is s with U+FFFD for each run of invalid UTF-8 and each NUL.
func pgText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}
