package cache_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// eventKeys are the JSON keys of contract.Event this test asserts. If Event gains a field, this
// list (and the expectations below) must be extended before the test passes again.
var eventKeys = []string{"id", "code_id", "code", "project_id", "action", "result", "reason", "verified_by",
	"ip", "ts", "version", "state_changed", "verified_at", "state_verified_by", "disabled"}

// TestOutboxEntriesDecodeIntoEvent checks every kind of outbox entry apply.lua writes, as the
// relay reads it: the entry, decoded by contract.DecodeOutboxEntry into contract.Event field by
// field, with its trace context; and the event's JSON (its form in a debug dump), decoded
// strictly.
func TestOutboxEntriesDecodeIntoEvent(t *testing.T) {
	testkit.OnEachRedis(t, testOutboxEntriesDecodeIntoEvent)
}

func testOutboxEntriesDecodeIntoEvent(t *testing.T) {
	const (
		trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		prior = int64(1_750_000_000_123) // an earlier verification, unix ms
	)
	// Caller text that needs JSON escaping: quotes, backslashes, control characters (NUL, tab,
	// newline, DEL), a slash, and non-ASCII up to four-byte UTF-8.
	weird := "q\"uote \\back\\slash \x00nul \x01\x1f\ttab\nnl\r \x7f é 漢字 😀 </tag> 'apos' \\u0041"
	long := strings.Repeat("é", 100) // 200 bytes: the head holds its length in two bytes
	past, future := ptr(1_700_000_000), ptr(1_900_000_000)
	const now = -1 // wantVerifiedAt: the operation's own time

	type evCase struct {
		name     string
		projOn   bool
		projExp  *int64
		code     contract.CodeRecord // the code's state before the operation
		action   contract.Action
		by       string
		reason   string
		ip       string
		trace    string
		wantErr  contract.ErrorCode
		wantVer  int64
		wantVAt  int64 // now = the operation's time
		wantBy   string
		wantDis  bool
		wantReas string
	}
	cases := []evCase{
		{name: "verify success with verified_by and trace", projOn: true, action: contract.ActionVerify,
			by: "till-7", trace: trace, wantVer: 1, wantVAt: now, wantBy: "till-7"},
		{name: "verify success without verified_by or trace", projOn: true, projExp: future,
			code: contract.CodeRecord{Version: 5, ExpiresAt: future}, action: contract.ActionVerify,
			wantVer: 6, wantVAt: now},
		{name: "verify success with text needing escaping", projOn: true, action: contract.ActionVerify,
			by: weird, ip: "2001:db8::1", trace: trace, wantVer: 1, wantVAt: now, wantBy: weird},
		{name: "verify success with a verified_by whose length takes two bytes", projOn: true,
			action: contract.ActionVerify, by: long, wantVer: 1, wantVAt: now, wantBy: long},
		{name: "verify PROJECT_DISABLED", projOn: false, projExp: past,
			code:   contract.CodeRecord{Disabled: true, VerifiedAtMs: prior, VerifiedBy: "old", Version: 3},
			action: contract.ActionVerify, by: "till-7", trace: trace,
			wantErr: contract.ProjectDisabled, wantVer: 3, wantVAt: prior, wantBy: "old", wantDis: true},
		{name: "verify PROJECT_EXPIRED", projOn: true, projExp: past, code: contract.CodeRecord{Version: 2, ExpiresAt: future},
			action: contract.ActionVerify, by: weird,
			wantErr: contract.ProjectExpired, wantVer: 2},
		{name: "verify CODE_DISABLED", projOn: true, code: contract.CodeRecord{Disabled: true, Version: 1},
			action: contract.ActionVerify, wantErr: contract.CodeDisabled, wantVer: 1, wantDis: true},
		{name: "verify CODE_ALREADY_USED", projOn: true,
			code:   contract.CodeRecord{VerifiedAtMs: prior, VerifiedBy: weird, Version: 1},
			action: contract.ActionVerify, by: "till-8", trace: trace,
			wantErr: contract.CodeAlreadyUsed, wantVer: 1, wantVAt: prior, wantBy: weird},
		{name: "verify CODE_ALREADY_USED without verifier", projOn: true,
			code:    contract.CodeRecord{VerifiedAtMs: prior, Version: 1},
			action:  contract.ActionVerify,
			wantErr: contract.CodeAlreadyUsed, wantVer: 1, wantVAt: prior},
		{name: "verify CODE_EXPIRED", projOn: true, projExp: future, code: contract.CodeRecord{ExpiresAt: past},
			action: contract.ActionVerify, by: "till-7", wantErr: contract.CodeExpired},
		{name: "reactivate success with reason", projOn: true,
			code:   contract.CodeRecord{VerifiedAtMs: prior, VerifiedBy: "till-7", Version: 2},
			action: contract.ActionReactivate, by: "support", reason: "refund #12", trace: trace,
			wantVer: 3, wantReas: "refund #12"},
		{name: "reactivate success with text needing escaping", projOn: true,
			code:   contract.CodeRecord{VerifiedAtMs: prior, Version: 1},
			action: contract.ActionReactivate, by: weird, reason: weird,
			wantVer: 2, wantReas: weird},
		{name: "reactivate success without reactivated_by or reason", projOn: true,
			code:   contract.CodeRecord{VerifiedAtMs: prior, VerifiedBy: "till-7", Version: 9},
			action: contract.ActionReactivate, wantVer: 10},
		{name: "reactivate CODE_ALREADY_UNUSED", projOn: true, code: contract.CodeRecord{Version: 4},
			action: contract.ActionReactivate, by: "support", reason: "not logged on failure", trace: trace,
			wantErr: contract.CodeAlreadyUnused, wantVer: 4},
		{name: "reactivate CODE_DISABLED", projOn: true,
			code:   contract.CodeRecord{Disabled: true, VerifiedAtMs: prior, VerifiedBy: "till-7", Version: 6},
			action: contract.ActionReactivate, by: "support", reason: "r",
			wantErr: contract.CodeDisabled, wantVer: 6, wantVAt: prior, wantBy: "till-7", wantDis: true},
		{name: "reactivate CODE_EXPIRED", projOn: true,
			code:   contract.CodeRecord{ExpiresAt: past, VerifiedAtMs: prior, Version: 1},
			action: contract.ActionReactivate, wantErr: contract.CodeExpired, wantVer: 1, wantVAt: prior},
		{name: "reactivate PROJECT_DISABLED", projOn: false,
			code:   contract.CodeRecord{VerifiedAtMs: prior, VerifiedBy: "till-7", Version: 1},
			action: contract.ActionReactivate, by: weird, reason: weird, trace: trace,
			wantErr: contract.ProjectDisabled, wantVer: 1, wantVAt: prior, wantBy: "till-7"},
		{name: "reactivate PROJECT_EXPIRED", projOn: true, projExp: past,
			code:   contract.CodeRecord{VerifiedAtMs: prior, Version: 1, ExpiresAt: future},
			action: contract.ActionReactivate, wantErr: contract.ProjectExpired, wantVer: 1, wantVAt: prior},
		{name: "verify CODE_EXPIRED by the project's expiry", projOn: true, projExp: past, code: contract.CodeRecord{Version: 2},
			action: contract.ActionVerify, wantErr: contract.CodeExpired, wantVer: 2},
	}

	f := newFixture(t)
	ctx := context.Background()
	seen := map[contract.ErrorCode]map[contract.Action]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.t = t
			f.clearOutbox()
			f.pid = contract.NewID()
			f.project(tc.projOn, tc.projExp)
			codeID := f.code("C", tc.code)
			op := f.call(tc.action, "C")
			op.By, op.Reason, op.TraceParent = tc.by, tc.reason, tc.trace
			if tc.ip != "" {
				op.IP = tc.ip
			}
			r := f.apply(op)
			if r.Outcome.Error != tc.wantErr || r.Outcome.CodeID != codeID || r.Replayed {
				t.Fatalf("outcome %+v, want error %q for code %s", r, tc.wantErr, codeID)
			}
			if seen[tc.wantErr] == nil {
				seen[tc.wantErr] = map[contract.Action]bool{}
			}
			seen[tc.wantErr][tc.action] = true

			entries := f.outboxRaw()
			if len(entries) != 1 {
				t.Fatalf("%d outbox entries, want 1", len(entries))
			}
			// The list element: the event in its compact form, the trace inside.
			raw := entries[0]
			if raw == "" || raw[0] == '{' {
				t.Fatalf("outbox entry %q is not the compact form", raw)
			}
			got, traceParent, err := contract.DecodeOutboxEntry(raw)
			if err != nil {
				t.Fatalf("decode entry %q: %v", raw, err)
			}
			if traceParent != tc.trace {
				t.Fatalf("traceparent %q, want %q", traceParent, tc.trace)
			}

			want := contract.Event{
				ID:         op.EventID,
				CodeID:     codeID,
				ProjectID:  f.pid,
				Action:     tc.action,
				Result:     contract.ResultFailed,
				Reason:     string(tc.wantErr),
				VerifiedBy: tc.by,
				IP:         op.IP,
				TS:         op.Now.UnixMilli(),
				Version:    tc.wantVer,
				Changed:    tc.wantErr == "",
				VerifiedAt: tc.wantVAt,
				StateBy:    tc.wantBy,
				Disabled:   tc.wantDis,
			}
			if tc.wantVAt == now {
				want.VerifiedAt = op.Now.UnixMilli()
			}
			if tc.wantErr == "" {
				want.Result = contract.ResultSuccess
				want.Reason = ""
				if tc.action == contract.ActionReactivate {
					want.Result = contract.ResultReactivated
					want.Reason = tc.wantReas
				}
			}
			compareEvents(t, got, want)
			// The event's JSON decodes strictly into the same event.
			js, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if again := decodeEventStrictly(t, string(js)); again != got {
				t.Fatalf("event %+v reads back from its JSON as %+v", got, again)
			}
			checkEventKeys(t, string(js), want)

			// The event's state snapshot is the code's live state after the operation.
			s, found := f.live("C")
			if !found || s.Version != got.Version || s.VerifiedAtMs != got.VerifiedAt ||
				s.VerifiedBy != got.StateBy || s.Disabled != got.Disabled {
				t.Fatalf("event snapshot %+v differs from the live state %+v", got, s)
			}
		})
	}
	f.t = t

	// Every business error the script can log appears above, for each action it applies to.
	for _, e := range []contract.ErrorCode{"", contract.ProjectDisabled, contract.ProjectExpired,
		contract.CodeDisabled, contract.CodeExpired} {
		if !seen[e][contract.ActionVerify] || !seen[e][contract.ActionReactivate] {
			t.Errorf("no case for %q on both actions", e)
		}
	}
	if !seen[contract.CodeAlreadyUsed][contract.ActionVerify] || !seen[contract.CodeAlreadyUnused][contract.ActionReactivate] {
		t.Error("no case for CODE_ALREADY_USED / CODE_ALREADY_UNUSED")
	}

	// CODE_NOT_FOUND has no code to log: its entry names the value instead, with the call's
	// head (event id, project, who, ip, trace) and no code id, state or version.
	t.Run("CODE_NOT_FOUND logs the value", func(t *testing.T) {
		f.t = t
		f.clearOutbox()
		value := "NOPE|with\x00odd bytes é"
		if err := f.c.MarkUnknown(ctx, f.pid, value, time.Minute); err != nil {
			t.Fatal(err)
		}
		var ops []contract.Operation
		for _, a := range []contract.Action{contract.ActionVerify, contract.ActionReactivate} {
			op := f.call(a, value)
			op.TraceParent, op.By, op.Reason = trace, "till-9", "refund"
			if r := f.apply(op); r.Outcome.Error != contract.CodeNotFound {
				t.Fatalf("%s: %+v", a, r.Outcome)
			}
			ops = append(ops, op)
		}
		raws := f.outboxRaw()
		if len(raws) != len(ops) {
			t.Fatalf("CODE_NOT_FOUND wrote %d outbox entries, want %d", len(raws), len(ops))
		}
		for i, raw := range raws {
			got, tp, err := contract.DecodeOutboxEntry(raw)
			if err != nil || tp != trace {
				t.Fatalf("entry %d: %v, trace %q", i, err, tp)
			}
			op := ops[i]
			want := contract.Event{ID: op.EventID, Code: value, ProjectID: f.pid, Action: op.Action, Result: contract.ResultFailed,
				Reason: string(contract.CodeNotFound), VerifiedBy: op.By, IP: op.IP, TS: op.Now.UnixMilli()}
			compareEvents(t, got, want)
			js, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			compareEvents(t, decodeEventStrictly(t, string(js)), want)
		}
	})
}

// decodeEventStrictly decodes one event the way a strict consumer would: no unknown key, no
// value of the wrong JSON type, nothing after the object.
func decodeEventStrictly(t *testing.T, raw string) contract.Event {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var e contract.Event
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("event %s: %v", raw, err)
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("event %s: trailing data %v (%v)", raw, tok, err)
	}
	return e
}

// compareEvents compares every field of contract.Event, by reflection so that no field can be
// skipped, and checks the fields are exactly the ones eventKeys lists.
func compareEvents(t *testing.T, got, want contract.Event) {
	t.Helper()
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	typ := gv.Type()
	var names []string
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("event field %s (%q) = %#v, want %#v", typ.Field(i).Name, name, gv.Field(i).Interface(), wv.Field(i).Interface())
		}
	}
	if !reflect.DeepEqual(names, eventKeys) {
		t.Fatalf("contract.Event declares %q, the test asserts %q", names, eventKeys)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// checkEventKeys checks the event JSON is one object whose keys are distinct and include every
// key contract.Event declares; only an omitempty field whose value is empty may be absent.
func checkEventKeys(t *testing.T, raw string, want contract.Event) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("event %s does not start an object: %v %v", raw, tok, err)
	}
	present := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("event %s: %v", raw, err)
		}
		k := tok.(string)
		if present[k] {
			t.Fatalf("event %s: key %q twice", raw, k)
		}
		present[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("event %s: value of %q: %v", raw, k, err)
		}
	}
	wv := reflect.ValueOf(want)
	for i := 0; i < wv.NumField(); i++ {
		name, opts, _ := strings.Cut(wv.Type().Field(i).Tag.Get("json"), ",")
		omitEmpty := strings.Contains(","+opts+",", ",omitempty,")
		if !present[name] && !(omitEmpty && wv.Field(i).IsZero()) {
			t.Errorf("event %s has no %q", raw, name)
		}
	}
}
