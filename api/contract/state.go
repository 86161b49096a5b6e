package contract

import "fmt"

// State is a code's derived state, the value of the list filter `status`.
type State string

// The four disjoint states of a code.
const (
	StateUnused   State = "unused"
	StateUsed     State = "used"
	StateDisabled State = "disabled"
	StateExpired  State = "expired"
)

// ParseState accepts exactly the four state names; anything else is an error the HTTP layer
// turns into a 400.
func ParseState(s string) (State, error) {
	switch State(s) {
	case StateUnused, StateUsed, StateDisabled, StateExpired:
		return State(s), nil
	}
	return "", fmt.Errorf("unknown status %q: use unused, used, disabled or expired", s)
}

// EffectiveExpiry is the code's own expiry, or its project's when the code has none; nil when
// neither expires.
func EffectiveExpiry(codeExpiresAt, projectExpiresAt *int64) *int64 {
	if codeExpiresAt != nil {
		return codeExpiresAt
	}
	return projectExpiresAt
}

// Expired tells whether an expiry (unix seconds) has passed at now: "passed" means now >= expiry.
func Expired(expiry *int64, nowUnix int64) bool {
	return expiry != nil && nowUnix >= *expiry
}

// DeriveState applies the contract's precedence: disabled > used > expired > unused.
func DeriveState(disabled, used bool, effectiveExpiry *int64, nowUnix int64) State {
	switch {
	case disabled:
		return StateDisabled
	case used:
		return StateUsed
	case Expired(effectiveExpiry, nowUnix):
		return StateExpired
	}
	return StateUnused
}

// Fill sets the derived fields of c (Status, IsExpired) from its stored fields. Field values
// follow the state, so a disabled code that was once verified shows status false.
func (c *Code) Fill(projectExpiresAt *int64, nowUnix int64) {
	st := DeriveState(c.IsDisabled, c.VerifiedAt != nil, EffectiveExpiry(c.ExpiresAt, projectExpiresAt), nowUnix)
	c.Status = st == StateUsed
	c.IsExpired = st == StateExpired
}
