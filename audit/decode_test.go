package audit

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
)

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

// checkEventValue holds decodeEvent to contract.DecodeOutboxEntry's reading of an outbox entry
// and to what PostgreSQL can store: it
// refuses what the reference refuses and what has an id no uuid column takes; it reads
// everything else as the reference does, except that its texts are always valid UTF-8 without
// NUL (U+FFFD in their place: a text column refuses both, and one such event would fail its
// batch for ever).
func checkEventValue(t *testing.T, value []byte) {
	var want contract.Event
	var refErr error
	want, _, refErr = contract.DecodeOutboxEntry(string(value))
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
	for _, s := range []string{"", "{}", `{"id":"a","code_id":"b"}`} {
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
	f.Add([]byte(`{"id":"a","code_id":"b"}`))
	for _, v := range compactSeeds(f) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value []byte) { checkEventValue(t, value) })
}
