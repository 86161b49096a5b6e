package audit

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
)

// eventJSONSeeds are inputs where JSON decoders are known to differ: key case, duplicate keys,
// escapes, invalid UTF-8, numbers out of range or of the wrong kind, nulls, trailing bytes.
var eventJSONSeeds = []string{
	`{"id":"0190f3a2b4c57d8e9fa0b1c2d3e4f506","code_id":"0190f3a2b4c57d8e9fa0b1c2d3e4f507","project_id":"0190f3a2b4c57d8e9fa0b1c2d3e4f508","action":"verify","result":"success","verified_by":"till 1","ip":"203.0.113.9","ts":1764100000000,"version":3,"state_changed":true,"verified_at":1764100000000,"state_verified_by":"till 1"}`,
	`{"id":"a","code":"SPRING-1","project_id":"p","action":"verify","result":"CODE_NOT_FOUND","ip":"::1","ts":1,"version":0,"state_changed":false}`,
	`{"ID":"a","Code_ID":"b","PROJECT_ID":"c"}`,
	`{"id":"a","id":"b","code_id":"c"}`,
	`{"id":"\u00e9\ud83d\ude00","code_id":"\"\\\/\b\f\n\r\t"}`,
	"{\"id\":\"\xff\xfe\",\"code_id\":\"x\"}",
	`{"id":"a","code_id":"b","ts":1.5}`,
	`{"id":"a","code_id":"b","ts":"1"}`,
	`{"id":"a","code_id":"b","ts":99999999999999999999}`,
	`{"id":"a","code_id":"b","ts":-0,"version":1e3}`,
	`{"id":null,"code_id":"b","state_changed":null}`,
	`{"id":"a","code_id":"b","state_changed":"true"}`,
	`{"id":"a","code_id":"b","extra":{"x":[1,2,{"y":null}]}}`,
	`{"id":"a","code_id":"b"} trailing`,
	`{"id":"a","code_id":"b"}{}`,
	`{"id":"a",}`,
	`[]`, `null`, `{}`, ``, `"x"`, `{"id":"a","code_id":"b"`,
	`{"id":"0190f3a2b4c57d8e9fa0b1c2d3e4f506","code_id":"0190f3a2b4c57d8e9fa0b1c2d3e4f507","project_id":"0190f3a2b4c57d8e9fa0b1c2d3e4f508","action":"verify","result":"success","verified_by":"till\u00001","ip":"\u0000","ts":1,"version":1,"state_changed":true}`,
	`{"id":"0190f3a2b4c57d8e9fa0b1c2d3e4f506","code":"SPRING\u0000-1","project_id":"0190f3a2b4c57d8e9fa0b1c2d3e4f508","action":"verify","result":"failed","reason":"CODE_NOT_FOUND"}`,
	`{"id":"0190f3a2b4c57d8e9fa0b1c2d3e4f506","code_id":"0190f3a2b4c57d8e9fa0b1c2d3e4f507","project_id":"p"}`,
	`{"id":"0190F3A2B4C57D8E9FA0B1C2D3E4F506","code_id":"0190f3a2b4c57d8e9fa0b1c2d3e4f507","project_id":"0190f3a2b4c57d8e9fa0b1c2d3e4f508"}`,
}

// compactSeeds are entries of the compact form: a verify, and ones whose texts PostgreSQL
// would refuse (NUL, invalid UTF-8) or whose ids it would.
func compactSeeds(t testing.TB) [][]byte {
	op := contract.Operation{Action: contract.ActionVerify, ProjectID: "0190f3a2b4c57d8e9fa0b1c2d3e4f508",
		EventID: "0190f3a2b4c57d8e9fa0b1c2d3e4f506", By: "till\x00 1", IP: "203.0.113.9", Now: time.UnixMilli(1_764_100_000_000)}
	head, err := contract.AppendEventHead(nil, op)
	if err != nil {
		t.Fatal(err)
	}
	const codeID = "\x01\x90\xf3\xa2\xb4\xc5\x7d\x8e\x9f\xa0\xb1\xc2\xd3\xe4\xf5\x07"
	var out [][]byte
	for _, tail := range []string{
		codeID + "0|2|1764100000000|till 1",
		codeID + "0CODE_ALREADY_USED|3|1764000000000|till\xff\xfe",
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00!SPRING\x00-1",
	} {
		out = append(out, append(slices.Clone(head), tail...))
	}
	return out
}

// checkEventValue holds decodeEvent to the reading its form defines (encoding/json's for JSON,
// contract.DecodeOutboxEntry's for the compact form) and to what PostgreSQL can store: it
// refuses what the reference refuses and what has an id no uuid column takes; it reads
// everything else as the reference does, except that its texts are always valid UTF-8 without
// NUL (U+FFFD in their place: a text column refuses both, and one such event would fail its
// batch for ever).
func checkEventValue(t *testing.T, value []byte) {
	var want contract.Event
	var refErr error
	if contract.IsCompact(value) {
		want, _, refErr = contract.DecodeOutboxEntry(string(value))
	} else {
		refErr = json.Unmarshal(value, &want)
	}
	got, err := decodeEvent(value)
	idsOK := contract.ValidID(want.ID) && contract.ValidID(want.ProjectID) &&
		(contract.ValidID(want.CodeID) || (want.CodeID == "" && want.Code != ""))
	switch {
	case refErr != nil && err == nil:
		t.Fatalf("%q: decodeEvent read %+v, the reference refuses it: %v", value, got, refErr)
	case refErr != nil:
		return
	case !idsOK && err != errNotEvent:
		t.Fatalf("%q: ids of %+v are not storable, decodeEvent: %+v, %v", value, want, got, err)
	case !idsOK:
		return
	case err != nil:
		t.Fatalf("%q: decodeEvent refuses it (%v), the reference reads %+v", value, err, want)
	}
	texts := func(e *contract.Event) []*string {
		return []*string{(*string)(&e.Action), &e.Result, &e.Reason, &e.VerifiedBy, &e.IP, &e.Code, &e.StateBy}
	}
	gotTexts, wantTexts := texts(&got), texts(&want)
	for i := range gotTexts {
		g, w := *gotTexts[i], *wantTexts[i]
		if !utf8.ValidString(g) || strings.IndexByte(g, 0) >= 0 {
			t.Fatalf("%q: decodeEvent's text %q is not storable", value, g)
		}
		if utf8.ValidString(w) && strings.IndexByte(w, 0) < 0 && g != w {
			t.Fatalf("%q: decodeEvent's text %q, the reference's %q", value, g, w)
		}
		*gotTexts[i], *wantTexts[i] = "", ""
	}
	if got != want {
		t.Fatalf("%q: decodeEvent read\n%+v\nthe reference\n%+v", value, got, want)
	}
}

func TestEventValuesReadAsTheirFormSaysAndStorable(t *testing.T) {
	for _, s := range eventJSONSeeds {
		checkEventValue(t, []byte(s))
	}
	for _, v := range compactSeeds(t) {
		checkEventValue(t, v)
		for n := range len(v) { // every cut of an entry: refused, or read as the reference does
			checkEventValue(t, v[:n])
		}
	}
}

func FuzzEventValue(f *testing.F) {
	for _, s := range eventJSONSeeds {
		f.Add([]byte(s))
	}
	for _, v := range compactSeeds(f) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value []byte) { checkEventValue(t, value) })
}
