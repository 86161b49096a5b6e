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
// below). TestEventValuesReadAsTheirFormSaysAndStorable and its fuzz target hold decodeEvent to
// encoding/json's reading of any JSON value and DecodeOutboxEntry's of any compact one, and
// what it accepts to what PostgreSQL stores.

// errNotEvent is a message that decodes but holds no event PostgreSQL could store: an event,
// project or code id missing or not 32 lowercase hex digits (an attempt on an unknown value
// has no code id but a value).
var errNotEvent = errors.New("no event: an event, project or code id is missing or malformed")

// decodeEvent reads a Kafka message value as an event the sink can store, or refuses it, so
// that the consumer skips it (and logs it) rather than offering PostgreSQL, again and again, a
// batch it can never commit. The JSON is read exactly as encoding/json would. Two differences
// of goccy/go-json are closed: it skips an unknown field's value without checking that it is
// JSON, so the value is checked first (encoding/json's scanner, a third of its Unmarshal); and
// it keeps invalid UTF-8 bytes in strings, where encoding/json writes U+FFFD, so such a value
// is read by encoding/json. Then storable holds either form to what PostgreSQL accepts.
func decodeEvent(value []byte) (contract.Event, error) {
	var ev contract.Event
	var err error
	switch {
	case contract.IsCompact(value):
		ev, _, err = contract.DecodeOutboxEntry(string(value))
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
	return storable(ev)
}

// storable is ev as PostgreSQL can hold it, or errNotEvent. Its ids must be well-formed (they
// go into uuid columns); its texts get U+FFFD for invalid UTF-8 and for NUL, which a text
// column refuses. The API checks what it writes, but the sink must not depend on every writer:
// one such event would fail its whole batch for ever.
func storable(ev contract.Event) (contract.Event, error) {
	if !ev.WellFormedIDs() {
		return contract.Event{}, errNotEvent
	}
	ev.Action = contract.Action(pgText(string(ev.Action)))
	for _, s := range []*string{&ev.Result, &ev.Reason, &ev.VerifiedBy, &ev.IP, &ev.Code, &ev.StateBy} {
		*s = pgText(*s)
	}
	return ev, nil
}

// pgText is s with U+FFFD for each run of invalid UTF-8 and for each NUL; s itself, without a
// copy, when it holds neither.
func pgText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}
