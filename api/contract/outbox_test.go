package contract_test

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// tail is what apply.lua appends to the head: code id (16 raw bytes), disabled, error code,
// version before, verified_at and the state's verified_by.
func tail(codeID16, disabled, errCode, version, vat, stateBy string) string {
	return codeID16 + disabled + errCode + "|" + version + "|" + vat + "|" + stateBy
}

// An outbox entry written as apply.lua writes it decodes into the event it records, whatever
// bytes the caller's texts hold.
func TestOutboxEntryRoundTrip(t *testing.T) {
	const codeID16 = "\x01\x93\x00|\xff ||\n\x00abcdef" // raw ids may hold any byte
	weird := "q\"uote |pipe| \x00nul\n漢字 😀"
	op := contract.Operation{Action: contract.ActionVerify, ProjectID: contract.NewID(), EventID: contract.NewID(),
		By: weird, Reason: "ignored on verify", IP: "2001:db8::1", TraceParent: "00-abc-def-01",
		Now: time.UnixMilli(1_800_000_000_123)}
	codeHex := hex.EncodeToString([]byte(codeID16))
	for _, tc := range []struct {
		name  string
		op    func(contract.Operation) contract.Operation
		tail  string
		want  func(contract.Event) contract.Event
		trace string
	}{
		{"verified", func(o contract.Operation) contract.Operation { return o },
			tail(codeID16, "0", "", "4", "1800000000123", weird),
			func(e contract.Event) contract.Event {
				e.Result, e.Changed, e.Version, e.VerifiedAt, e.StateBy = contract.ResultSuccess, true, 5, 1_800_000_000_123, weird
				return e
			}, "00-abc-def-01"},
		{"already used by another", func(o contract.Operation) contract.Operation { o.TraceParent = ""; return o },
			tail(codeID16, "1", "CODE_DISABLED", "7", "1750000000000", "till|7"),
			func(e contract.Event) contract.Event {
				e.Result, e.Reason, e.Version, e.VerifiedAt, e.StateBy, e.Disabled = contract.ResultFailed, "CODE_DISABLED", 7, 1_750_000_000_000, "till|7", true
				return e
			}, ""},
		{"reactivated", func(o contract.Operation) contract.Operation {
			o.Action, o.By, o.Reason = contract.ActionReactivate, "", weird
			return o
		}, tail(codeID16, "0", "", "0", "", ""),
			func(e contract.Event) contract.Event {
				e.Action, e.VerifiedBy, e.Result, e.Reason, e.Changed, e.Version = contract.ActionReactivate, "", contract.ResultReactivated, weird, true, 1
				return e
			}, "00-abc-def-01"},
		{"reactivate refused", func(o contract.Operation) contract.Operation { o.Action = contract.ActionReactivate; return o },
			tail(codeID16, "0", "CODE_ALREADY_UNUSED", "2", "", ""),
			func(e contract.Event) contract.Event {
				e.Action, e.Result, e.Reason, e.Version = contract.ActionReactivate, contract.ResultFailed, "CODE_ALREADY_UNUSED", 2
				return e
			}, "00-abc-def-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.op(op)
			head, err := contract.AppendEventHead(nil, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(head) != contract.EventHeadSize(o) {
				t.Fatalf("head of %d bytes, EventHeadSize says %d", len(head), contract.EventHeadSize(o))
			}
			got, trace, err := contract.DecodeOutboxEntry(string(head) + tc.tail)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want(contract.Event{ID: o.EventID, CodeID: codeHex, ProjectID: o.ProjectID, Action: o.Action,
				VerifiedBy: o.By, IP: o.IP, TS: o.Now.UnixMilli()})
			if got != want || trace != tc.trace {
				t.Fatalf("decoded %+v, trace %q\nwant    %+v, trace %q", got, trace, want, tc.trace)
			}
		})
	}
}

// The compact form is read strictly, and an entry of the previous format (JSON) as JSON.
func TestOutboxEntryDecodingIsStrict(t *testing.T) {
	op := contract.Operation{Action: contract.ActionVerify, ProjectID: contract.NewID(), EventID: contract.NewID(),
		By: "till", IP: "127.0.0.1", Now: time.UnixMilli(1_800_000_000_123)}
	head, err := contract.AppendEventHead(nil, op)
	if err != nil {
		t.Fatal(err)
	}
	good := string(head) + tail("0123456789abcdef", "0", "", "1", "1800000000123", "till")
	if _, _, err := contract.DecodeOutboxEntry(good); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"empty":              "",
		"another format":     "\x02" + good[1:],
		"another action":     good[:1] + "x" + good[2:],
		"ts not digits":      good[:2] + "18000000001x3" + good[15:],
		"by past the end":    good[:15] + "\xff\xff" + good[17:],
		"cut in the head":    good[:40],
		"no tail":            string(head),
		"short tail":         string(head) + "0123456789abcdef0",
		"disabled flag":      string(head) + tail("0123456789abcdef", "x", "", "1", "", ""),
		"three fields":       string(head) + "0123456789abcdef0|1|",
		"version signed":     string(head) + tail("0123456789abcdef", "0", "", "-1", "", ""),
		"version empty":      string(head) + tail("0123456789abcdef", "0", "", "", "", ""),
		"verified_at text":   string(head) + tail("0123456789abcdef", "0", "", "1", "soon", ""),
		"bad json":           `{"id":`,
		"unknown, no value":  string(head) + strings.Repeat("\x00", 16) + "!",
		"unknown with an id": string(head) + "0123456789abcdef!NOPE",
	} {
		if ev, _, err := contract.DecodeOutboxEntry(bad); err == nil {
			t.Errorf("%s: decoded %+v without an error", name, ev)
		}
	}
	unknown, _, err := contract.DecodeOutboxEntry(string(head) + strings.Repeat("\x00", 16) + "!NO|PE")
	if err != nil || unknown.CodeID != "" || unknown.Code != "NO|PE" || unknown.Reason != string(contract.CodeNotFound) ||
		unknown.Result != contract.ResultFailed || unknown.Changed || unknown.ID != op.EventID {
		t.Fatalf("unknown-value entry: %+v, %v", unknown, err)
	}
}

// AppendEventHead refuses what the script or the reader would misread.
func TestEventHeadRefusesWhatItCannotEncode(t *testing.T) {
	good := contract.Operation{Action: contract.ActionVerify, ProjectID: contract.NewID(), EventID: contract.NewID(),
		Now: time.UnixMilli(1_800_000_000_123)}
	for name, mod := range map[string]func(*contract.Operation){
		"action":         func(o *contract.Operation) { o.Action = "disable" },
		"event id":       func(o *contract.Operation) { o.EventID = strings.ToUpper(o.EventID) },
		"project id":     func(o *contract.Operation) { o.ProjectID = "p1" },
		"time too early": func(o *contract.Operation) { o.Now = time.Unix(0, 0) },
		"time too late":  func(o *contract.Operation) { o.Now = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) },
		"long by":        func(o *contract.Operation) { o.By = strings.Repeat("b", 1<<16) },
	} {
		op := good
		mod(&op)
		if h, err := contract.AppendEventHead(nil, op); err == nil {
			t.Errorf("%s: encoded %q without an error", name, h)
		}
	}
}

// FuzzDecodeOutboxEntry: the relay decodes whatever a list holds; no input panics it, and an
// entry it accepts names a code or, for an attempt on an unknown value, the value.
func FuzzDecodeOutboxEntry(f *testing.F) {
	op := contract.Operation{Action: contract.ActionReactivate, ProjectID: contract.NewID(), EventID: contract.NewID(),
		By: "till", Reason: "refund", IP: "::1", Now: time.UnixMilli(1_800_000_000_123)}
	head, err := contract.AppendEventHead(nil, op)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(head) + tail("0123456789abcdef", "1", "CODE_DISABLED", "7", "", ""))
	f.Add(string(head) + strings.Repeat("\x00", 16) + "!value")
	f.Add(`{"id":"x","code_id":"y"}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, raw string) {
		ev, _, err := contract.DecodeOutboxEntry(raw)
		if err != nil || raw[0] == '{' {
			return
		}
		if (ev.CodeID == "") == (ev.Code == "") {
			t.Fatalf("%q decoded to %+v: neither or both of a code id and a value", raw, ev)
		}
	})
}
