package audit

import (
	"encoding/json"
	"testing"

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
}

// checkEventJSON holds decodeEvent to encoding/json's reading of value: both refuse it, or
// both read the same event. A value of the compact form is not JSON's to judge
// (TestCompactEntriesBecomeEventMessages, and contract's FuzzDecodeOutboxEntry).
func checkEventJSON(t *testing.T, value []byte) {
	if contract.IsCompact(value) {
		return
	}
	var want contract.Event
	stdErr := json.Unmarshal(value, &want)
	got, err := decodeEvent(value)
	switch {
	case stdErr != nil && err == nil:
		t.Fatalf("%q: decodeEvent read %+v, encoding/json refuses it: %v", value, got, stdErr)
	case stdErr == nil && err != nil && err != errNotEvent:
		t.Fatalf("%q: decodeEvent refuses it (%v), encoding/json reads %+v", value, err, want)
	case stdErr == nil && err == nil && got != want:
		t.Fatalf("%q: decodeEvent read\n%+v\nencoding/json\n%+v", value, got, want)
	case err == errNotEvent && (want.ID != "" && (want.CodeID != "" || want.Code != "")):
		t.Fatalf("%q: decodeEvent finds no event in %+v", value, want)
	}
}

func TestEventJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range eventJSONSeeds {
		checkEventJSON(t, []byte(s))
	}
}

func FuzzEventJSON(f *testing.F) {
	for _, s := range eventJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) { checkEventJSON(t, value) })
}
