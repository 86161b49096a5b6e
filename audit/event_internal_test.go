package audit

import (
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// An outbox entry of the compact form becomes a message holding the entry as it is, keyed by
// its code id, with the trace context the entry carries as its header, which the consumer reads
// as the event; one that does not decode is published as it is, without a key, and counted
// malformed.
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
	msg, malformed := toMessage(raw)
	if malformed {
		t.Fatal("toMessage: malformed")
	}
	if string(msg.Value) != raw {
		t.Fatalf("message value %q, want the entry %q", msg.Value, raw)
	}
	ev, err := decodeEvent(msg.Value)
	if err != nil {
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

	// Texts that are not UTF-8 (the API refuses them, but the sink must not depend on every
	// writer: PostgreSQL would refuse the batch again and again) are read with U+FFFD. The
	// entry is the one above with its ip ("\x07": a text of 6 bytes) ending in a stray byte.
	bad := string(head[:len(head)-len(op.IP)-len(op.TraceParent)-2]) + "\x0710.0.\xff" + string(head[len(head)-len(op.TraceParent)-1:]) +
		"\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\x45\x67\x89\xab\xcd\xef" + "0|0|1800000000123|till-\xc3"
	ev, err = decodeEvent([]byte(bad))
	if err != nil || ev.IP != "10.0.\uFFFD" || ev.StateBy != "till-\uFFFD" {
		t.Fatalf("invalid UTF-8 read as ip %q, state's verified_by %q (%v)", ev.IP, ev.StateBy, err)
	}

	cut := raw[:len(raw)-30]
	msg, malformed = toMessage(cut)
	if !malformed || string(msg.Value) != cut || msg.Key != nil {
		t.Fatalf("a cut entry: malformed %v, key %q, value %q", malformed, msg.Key, msg.Value)
	}
	for _, bad := range []string{"", "\x00", "{not json"} {
		if msg, malformed := toMessage(bad); !malformed || string(msg.Value) != bad {
			t.Errorf("entry %q: malformed %v, value %q", bad, malformed, msg.Value)
		}
	}
}

// Rendezvous assignment: every outbox has one preferred relay whatever the order of the names;
// with three relays each prefers about a third of 256 outboxes; when one leaves, only its
// outboxes change hands.
func TestPreferredRelaySpreadsAndMovesOnlyTheLeaversShare(t *testing.T) {
	outboxes := make([]string, 256)
	for i := range outboxes {
		outboxes[i] = "acv:{" + string(rune('A'+i%26)) + string(rune('a'+i/26)) + "}:events"
	}
	three := []string{"relay-a", "relay-b", "relay-c"}
	count := map[string]int{}
	for _, k := range outboxes {
		p := preferredRelay(three, k)
		if q := preferredRelay([]string{"relay-c", "relay-a", "relay-b"}, k); q != p {
			t.Fatalf("%s: %s or %s depending on the order", k, p, q)
		}
		count[p]++
		if left := preferredRelay([]string{"relay-a", "relay-c"}, k); p != "relay-b" && left != p {
			t.Fatalf("%s moved from %s to %s when relay-b left", k, p, left)
		}
	}
	for _, n := range three {
		if count[n] < 256/3-25 || count[n] > 256/3+25 {
			t.Errorf("relay %s prefers %d of 256 outboxes: %v", n, count[n], count)
		}
	}
	if nameOf(newToken("relay/7")) != "relay/7" {
		t.Error("a name with a slash does not survive its token")
	}
}
