package contract

import (
	"encoding/json"
	"testing"
)

// TestMessagesAreTheOriginalSentences pins every result message to the original service's exact
// sentence (contract: "Verify and reactivate outcomes"), which its clients may display or match.
func TestMessagesAreTheOriginalSentences(t *testing.T) {
	cases := []struct {
		a    Action
		code ErrorCode
		want string
	}{
		{ActionVerify, "", "Code verified successfully"},
		{ActionReactivate, "", "Code reactivated successfully"},
		{ActionVerify, CodeNotFound, "Code not found"},
		{ActionReactivate, CodeNotFound, "Code not found"},
		{ActionVerify, CodeAlreadyUsed, "Code has already been used"},
		{ActionReactivate, CodeAlreadyUnused, "Code is already unused"},
		{ActionVerify, CodeExpired, "Code is expired"},
		{ActionReactivate, CodeExpired, "Code is expired"},
		{ActionVerify, CodeDisabled, "Code is disabled"},
		{ActionVerify, ProjectDisabled, "Project is disabled"},
		{ActionVerify, ProjectExpired, "Project is expired"},
		{ActionReactivate, ProjectExpired, "Project is expired"},
	}
	for _, c := range cases {
		if got := Message(c.a, c.code); got != c.want {
			t.Errorf("Message(%s, %q) = %q, want %q", c.a, c.code, got, c.want)
		}
	}
}

// TestOutcomeBodiesCarryTheSentences checks the rendered bodies use the same sentences.
func TestOutcomeBodiesCarryTheSentences(t *testing.T) {
	o := Outcome{Action: ActionReactivate, Code: "A", CodeID: "c1", Error: CodeAlreadyUnused}
	if r := o.ReactivateResponse(); r.Message != "Code is already unused" || r.Success {
		t.Fatalf("reactivate body = %+v", r)
	}
	o = Outcome{Action: ActionVerify, Code: "A", CodeID: "c1", Error: ProjectExpired}
	if r := o.VerifyResponse(); r.Message != "Project is expired" || r.Success {
		t.Fatalf("verify body = %+v", r)
	}
}

// AppendBody must match encoding/json of the response types byte for byte, for every shape of
// result and for code values with characters that need escaping.
func TestAppendBodyMatchesEncodingJSON(t *testing.T) {
	values := []string{"ABC", `q"uo\te`, "<a&b>", "tab\tnew\nline\r\x01\x1f", "ünï✓😀", "line\u2028sep\u2029", "bad\xffutf8", ""}
	for _, v := range values {
		for _, o := range []Outcome{
			{Action: ActionVerify, Code: v, CodeID: "01a2", VerifiedAt: 1_800_000_000_123, At: 1_800_000_000_123},
			{Action: ActionVerify, Code: v, Error: CodeNotFound},
			{Action: ActionVerify, Code: v, CodeID: "01a2", Error: CodeAlreadyUsed, VerifiedAt: 1_700_000_000_000},
			{Action: ActionReactivate, Code: v, CodeID: "01a2", At: 1_800_000_000_999},
			{Action: ActionReactivate, Code: v, CodeID: "01a2", Error: CodeAlreadyUnused},
		} {
			var want []byte
			if o.Action == ActionVerify {
				want, _ = json.Marshal(o.VerifyResponse())
			} else {
				want, _ = json.Marshal(o.ReactivateResponse())
			}
			if got := o.AppendBody(nil); string(got) != string(want) {
				t.Errorf("AppendBody %s\nencoding/json %s", got, want)
			}
		}
	}
}

// VerifyResponse and ReactivateResponse are the result bodies encoding/json writes, which
// AppendBody must match byte for byte.
func (o Outcome) VerifyResponse() VerifyResponse {
	r := VerifyResponse{Success: o.Success(), CodeID: o.codeID(), Code: o.Code, Message: Message(ActionVerify, o.Error), ErrorCode: o.errorCode()}
	if at, ok := o.at(); ok {
		r.VerifiedAt = &at
	}
	return r
}

// ReactivateResponse is the outcome of a reactivate as its result body.
func (o Outcome) ReactivateResponse() ReactivateResponse {
	r := ReactivateResponse{Success: o.Success(), CodeID: o.codeID(), Code: o.Code, Message: Message(ActionReactivate, o.Error), ErrorCode: o.errorCode()}
	if at, ok := o.at(); ok {
		r.ReactivatedAt = &at
	}
	return r
}

func (o Outcome) codeID() *string {
	if o.CodeID == "" {
		return nil
	}
	return &o.CodeID
}

func (o Outcome) errorCode() *string {
	if o.Error == "" {
		return nil
	}
	e := string(o.Error)
	return &e
}
