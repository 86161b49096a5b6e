package contract_test

import (
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
)

func TestDeriveStatePrecedence(t *testing.T) {
	past, future := int64(100), int64(300)
	now := int64(200)
	cases := []struct {
		name             string
		disabled, used   bool
		codeExp, projExp *int64
		want             contract.State
	}{
		{"disabled beats all", true, true, &past, &past, contract.StateDisabled},
		{"used beats expired", false, true, &past, nil, contract.StateUsed},
		{"code expired", false, false, &past, &future, contract.StateExpired},
		{"code expiry overrides project's", false, false, &future, &past, contract.StateUnused},
		{"project expiry when code has none", false, false, nil, &past, contract.StateExpired},
		{"expiry at now has passed", false, false, &now, nil, contract.StateExpired},
		{"nothing expires", false, false, nil, nil, contract.StateUnused},
	}
	for _, tc := range cases {
		got := contract.DeriveState(tc.disabled, tc.used, contract.EffectiveExpiry(tc.codeExp, tc.projExp), now)
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestCodeFieldsFollowState(t *testing.T) {
	past := int64(100)
	v := int64(150)
	c := contract.Code{IsDisabled: true, VerifiedAt: &v, ExpiresAt: &past}
	c.Fill(nil, 200)
	if c.Status || c.IsExpired {
		t.Fatalf("disabled used code: status=%v is_expired=%v", c.Status, c.IsExpired)
	}
	c = contract.Code{ExpiresAt: &past}
	c.Fill(nil, 200)
	if c.Status || !c.IsExpired {
		t.Fatalf("expired code: status=%v is_expired=%v", c.Status, c.IsExpired)
	}
}

func TestValidation(t *testing.T) {
	long := strings.Repeat("A", 101)
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"ABC", true}, {"", false}, {"A\x01B", false}, {"Ünïcødé-✓", true}, {"\xff", false}, {long, false}} {
		if err := contract.ValidateCode(tc.v); (err == nil) != tc.ok {
			t.Errorf("ValidateCode(%q) = %v", tc.v, err)
		}
	}
	if _, err := contract.ParseState("Used"); err == nil {
		t.Error("ParseState is case-sensitive: Used must be refused")
	}
	if err := contract.ValidateIdempotencyKey("order-1"); err != nil {
		t.Error(err)
	}
	if err := contract.ValidateIdempotencyKey("é"); err == nil {
		t.Error("non-ASCII idempotency key accepted")
	}
}
