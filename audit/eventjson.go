package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
	gojson "github.com/goccy/go-json"
)

// A Kafka message value is an outbox entry as the relay read it (toMessage): the compact form,
// or the event's JSON, which relays of earlier versions published and which outbox entries
// written before the compact form hold. goccy/go-json reads the JSON into contract.Event in a
// sixth of encoding/json's time with 2 allocations instead of 13 (half of it, with the check
// below). TestEventJSONAgreesWithEncodingJSON and its fuzz target hold the two to the same
// reading of any input.

// errNotEvent is a message that decodes but holds no event: no id, or neither a code id nor
// a value.
var errNotEvent = errors.New("no event id, code id or value")

// decodeEvent reads a Kafka message value as an event. The JSON is read exactly as
// encoding/json would. Two differences of goccy/go-json are closed: it skips an unknown field's
// value without checking that it is JSON, so the value is checked first (encoding/json's
// scanner, a third of its Unmarshal); and it keeps invalid UTF-8 bytes in strings, where
// encoding/json writes U+FFFD, so such a value is read by encoding/json: PostgreSQL refuses
// invalid UTF-8 in text, and one such string would fail its whole batch again and again. For
// the same reason the compact form's texts (the API checked them, but the sink must not depend
// on every writer) get U+FFFD for invalid UTF-8 too.
func decodeEvent(value []byte) (contract.Event, error) {
	var ev contract.Event
	var err error
	switch {
	case contract.IsCompact(value):
		ev, _, err = contract.DecodeOutboxEntry(string(value))
		for _, s := range []*string{&ev.VerifiedBy, &ev.Reason, &ev.IP, &ev.StateBy, &ev.Code} {
			*s = strings.ToValidUTF8(*s, "\uFFFD")
		}
	case !utf8.Valid(value):
		err = json.Unmarshal(value, &ev)
	case !json.Valid(value):
		err = errors.New("not JSON")
	default:
		err = gojson.Unmarshal(value, &ev)
	}
	if err != nil {
		return contract.Event{}, fmt.Errorf("decode event: %w", err)
	}
	if ev.ID == "" || (ev.CodeID == "" && ev.Code == "") {
		return contract.Event{}, errNotEvent
	}
	return ev, nil
}
