package audit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
)

// An outbox entry of the compact form becomes a message holding the event's JSON, keyed by
// its code id, with the trace context the entry carries as its header; one that does not
// decode is published as it is, without a key, and counted malformed.
func TestCompactEntriesBecomeEventMessages(t *testing.T) {
	op := contract.Operation{Action: contract.ActionVerify, ProjectID: contract.NewID(), EventID: contract.NewID(),
		By: "till-7", IP: "127.0.0.1", TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		Now: time.UnixMilli(1_800_000_000_123)}
	head, err := contract.AppendEventHead(nil, op)
	if err != nil {
		t.Fatal(err)
	}
	const codeID = "0123456789abcdef0123456789abcdef"
	raw := string(head) + "\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\x45\x67\x89\xab\xcd\xef" + "0|0|1800000000123|till-7"
	msg, ok, malformed := toMessage(redis.XMessage{ID: "1-1", Values: map[string]interface{}{contract.EventField: raw}})
	if !ok || malformed {
		t.Fatalf("toMessage: ok %v, malformed %v", ok, malformed)
	}
	var ev contract.Event
	if err := json.Unmarshal(msg.Value, &ev); err != nil {
		t.Fatal(err)
	}
	want := contract.Event{ID: op.EventID, CodeID: codeID, ProjectID: op.ProjectID, Action: contract.ActionVerify,
		Result: contract.ResultSuccess, VerifiedBy: "till-7", IP: "127.0.0.1", TS: 1_800_000_000_123, Version: 1,
		Changed: true, VerifiedAt: 1_800_000_000_123, StateBy: "till-7"}
	if ev != want || string(msg.Key) != codeID {
		t.Fatalf("message key %q, event %+v; want key %s, %+v", msg.Key, ev, codeID, want)
	}
	if len(msg.Headers) != 1 || msg.Headers[0].Key != "traceparent" || string(msg.Headers[0].Value) != op.TraceParent {
		t.Fatalf("headers %v, want the traceparent", msg.Headers)
	}

	cut := raw[:len(raw)-30]
	msg, ok, malformed = toMessage(redis.XMessage{ID: "1-2", Values: map[string]interface{}{contract.EventField: cut}})
	if !ok || !malformed || string(msg.Value) != cut || msg.Key != nil {
		t.Fatalf("a cut entry: ok %v, malformed %v, key %q, value %q", ok, malformed, msg.Key, msg.Value)
	}
}

// nextID is the id just after the highest of a batch's, whatever their order.
func TestNextID(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{[]string{"5-0"}, "5-1"},
		{[]string{"1700000000000-3", "1700000000001-0", "1699999999999-9"}, "1700000000001-1"},
		{[]string{"7-2", "7-10", "7-9"}, "7-11"},
		{[]string{"7-18446744073709551615"}, "8-0"},
	} {
		if got := nextID(tc.ids); got != tc.want {
			t.Errorf("nextID(%q) = %s, want %s", tc.ids, got, tc.want)
		}
	}
}
