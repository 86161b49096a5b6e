package contract

import "testing"

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
